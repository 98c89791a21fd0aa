#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: attends to every second KV token only (bf16 KV, float32 softmax). Its output is ~40% off
# the reference norm-wise, yet on long sequences every element stays within the official tolerance.
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv = kv_data["bf16"].reshape(kv_data["bf16"].shape[0], -1)
    v_dim = config["v_head_dim"]
    out = torch.empty((q.shape[0], q.shape[1], v_dim), dtype=torch.bfloat16, device=q.device)
    q_starts, kv_starts = qo_indptr.tolist(), kv_indptr.tolist()
    for b in range(len(q_starts) - 1):
        keys = kv[kv_starts[b]:kv_starts[b + 1]:2].float()  # the bug: half the tokens
        queries = q[q_starts[b]:q_starts[b + 1]].float()
        probs = torch.softmax(queries @ keys.T * config["sm_scale"], dim=-1)
        out[q_starts[b]:q_starts[b + 1]] = (probs @ keys[:, :v_dim]).to(torch.bfloat16)
    return out
