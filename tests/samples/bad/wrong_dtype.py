#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: the right values in float32 instead of bfloat16.

The official check compares in float32 and passes it; so does the harness, with a loud warning.
Expected: pass, with the warning "output dtype is torch.float32".
"""
from reference import ref_kernel
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return ref_kernel(data).float()
