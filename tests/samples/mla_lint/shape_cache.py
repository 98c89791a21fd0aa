#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# MLA lint sample: a workspace cached by shape and refilled on every call, written correctly (no MLA finding).
import torch

_workspace = {}


def custom_kernel(data):
    q, kv_data, qo_indptr, kv_indptr, config = data
    key = (q.shape[0], kv_data["bf16"].shape[0])
    if key not in _workspace:
        _workspace[key] = torch.empty(q.shape[0], dtype=torch.int32, device=q.device)
    lengths = _workspace[key]
    lengths.copy_(kv_indptr[1:] - kv_indptr[:-1])
    return torch.zeros((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device) + lengths.sum() * 0
