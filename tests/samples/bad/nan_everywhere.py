#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: every output element is NaN. Expected: fail, mismatches and a NaN warning."""
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q = data[0]
    return torch.full((q.shape[0], 16, 512), float("nan"), dtype=torch.bfloat16, device=q.device)
