#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: writes through a null pointer with ctypes. Expected: error, "killed by signal 11 (SIGSEGV)"."""
import ctypes

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    ctypes.memmove(8, b"boom", 4)  # address 8: the null page, never mapped
    raise AssertionError("unreachable")
