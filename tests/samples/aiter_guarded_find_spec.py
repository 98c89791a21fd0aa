#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: aiter is optional (imported only when importlib.util.find_spec finds it); the fallback
# is the reference itself, so it passes wherever aiter is missing.
import importlib.util

from task import input_t, output_t
from reference import ref_kernel

HAS_AITER = importlib.util.find_spec("aiter") is not None


def custom_kernel(data: input_t) -> output_t:
    if HAS_AITER:
        from aiter.mla import mla_decode_fwd
        raise NotImplementedError(mla_decode_fwd)
    return ref_kernel(data)
