#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: returns memory it never wrote (torch.empty).

On a GPU the caching allocator may hand back the block that held the reference's output for the same
seed (benchmark mode checks the warm-up's seed again), so garbage could pass. The harness poisons
output-sized memory before every checked call. Expected: fail.
"""
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q = data[0]
    return torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
