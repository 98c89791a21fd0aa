#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: a correct plain-torch submission (it simply calls the reference). It reports its path,
# a checksum of the query it was given (which seed made it) and whether POPCORN_SEED leaked to it.
import os

from task import input_t, output_t
from reference import ref_kernel

LAST_RUN_INFO = {}


def custom_kernel(data: input_t) -> output_t:
    LAST_RUN_INFO["path"] = "reference"
    LAST_RUN_INFO["q_sum"] = float(data[0].float().sum())
    LAST_RUN_INFO["popcorn_seed_visible"] = "POPCORN_SEED" in os.environ
    return ref_kernel(data)
