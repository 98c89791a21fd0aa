#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: imports a module that is not installed. Expected: error, ModuleNotFoundError."""
import mla_kernels_that_do_not_exist  # noqa: F401

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return mla_kernels_that_do_not_exist.decode(*data)
