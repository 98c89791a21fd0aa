#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: aiter is optional (import in try / except ImportError); the fallback path raises.
from task import input_t, output_t

try:
    from aiter.mla import mla_decode_fwd
except ImportError:
    mla_decode_fwd = None


def custom_kernel(data: input_t) -> output_t:
    if mla_decode_fwd is None:
        raise RuntimeError("the torch fallback of this sample is not written yet")
    raise NotImplementedError("the aiter path is not needed by the tests")
