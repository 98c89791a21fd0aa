#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: returns a tensor on the wrong device (a meta tensor holds no data at all).

Expected: fail, "output is on meta".
"""
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q = data[0]
    return torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device="meta")
