#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: aiter is optional (imported only in a torch.version.hip branch); the fallback returns
# zeros, a wrong answer.
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q = data[0]
    if torch.version.hip:
        import aiter
        raise NotImplementedError(aiter)
    return torch.zeros((q.shape[0], q.shape[1], 512), dtype=torch.bfloat16, device=q.device)
