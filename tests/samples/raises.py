#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: raises a Python exception on every call.
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    raise ValueError("this kernel does not support that shape")
