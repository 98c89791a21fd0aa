#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""GPU bad submission: an out-of-range gather, which trips a device-side assert.

Expected: error with the device's message (device-side assert triggered); the next submission runs
normally in a fresh worker.
"""
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q = data[0]
    index = torch.full((4,), 1 << 40, dtype=torch.long, device=q.device)
    return q[index][..., :512] * 1
