#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""GPU bad submission: allocates 8 GiB chunks on the device until it is full.

Expected: error, "out of memory: OutOfMemoryError: ..."; the next submission in the run still works.
"""
import torch

from task import input_t, output_t

_hoard = []


def custom_kernel(data: input_t) -> output_t:
    while True:
        _hoard.append(torch.empty(8 << 30, dtype=torch.uint8, device=data[0].device))
