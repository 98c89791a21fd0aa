#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: allocates until memory runs out.

The chunks are reserved, not written, so even without the worker's memory limit this machine's RAM is
never filled; with the limit the allocation fails at once. Expected: error, "out of memory".
"""
import torch

from task import input_t, output_t

_hoard = []


def custom_kernel(data: input_t) -> output_t:
    q = data[0]
    while True:
        _hoard.append(torch.empty(1 << 30, dtype=torch.uint8, device=q.device))
