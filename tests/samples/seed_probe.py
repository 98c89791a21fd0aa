#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: calls the reference and reports whether POPCORN_SEED leaked to it. Reading the evaluator's seed
# is a pattern the server rejects, so its verdict is "rejected" however correct it is.
import os

from task import input_t, output_t
from reference import ref_kernel

LAST_RUN_INFO = {}


def custom_kernel(data: input_t) -> output_t:
    LAST_RUN_INFO["q_sum"] = float(data[0].float().sum())
    LAST_RUN_INFO["popcorn_seed_visible"] = "POPCORN_SEED" in os.environ
    return ref_kernel(data)
