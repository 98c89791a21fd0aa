#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: a correct plain-torch submission (it simply calls the reference). It reports its path and
# a checksum of the query it was given (which seed made it).
from task import input_t, output_t
from reference import ref_kernel

LAST_RUN_INFO = {}


def custom_kernel(data: input_t) -> output_t:
    LAST_RUN_INFO["path"] = "reference"
    LAST_RUN_INFO["q_sum"] = float(data[0].float().sum())
    return ref_kernel(data)
