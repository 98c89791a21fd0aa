#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: returns zeros. On long sequences the official check still passes it (about 1.5% of elements are
# not within rtol = atol = 0.1, under the 5% the MLA rule allows); the sharper verdict must warn.
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q, _, _, _, config = data
    return torch.zeros((q.shape[0], q.shape[1], config["v_head_dim"]), dtype=torch.bfloat16, device=q.device)
