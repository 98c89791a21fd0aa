#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: a correct output with three NaNs.

The official 5% mismatch rule passes it; the harness gives that verdict and warns loudly.
Expected: pass, with the warning "output holds 3 NaN".
"""
from reference import ref_kernel
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    output = ref_kernel(data)
    output[0, 0, :3] = float("nan")
    return output
