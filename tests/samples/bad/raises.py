#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: custom_kernel raises. Expected: error, the exception and its line."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    raise RuntimeError("split count must divide the KV length")
