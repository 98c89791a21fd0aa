#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: calls AMD aiter's MLA decode (only its text matters to the tests).
from aiter.mla import mla_decode_fwd

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    raise NotImplementedError(mla_decode_fwd)
