#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: dereferences a null pointer through ctypes. Expected: error, "killed by signal 11 (SIGSEGV)"."""
import ctypes

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    ctypes.string_at(0, 16)
    return data[0]
