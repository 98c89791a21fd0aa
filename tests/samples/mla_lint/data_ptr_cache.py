#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# MLA lint sample: metadata cached under the input's data_ptr() (trips MLA_DATA_PTR_CACHE).
import torch

_cache = {}


def custom_kernel(data):
    q, kv_data, qo_indptr, kv_indptr, config = data
    key = (kv_indptr.data_ptr(), q.shape[0])
    if key not in _cache:  # EXPECT MLA_DATA_PTR_CACHE
        _cache[key] = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
    lengths = _cache[key]
    return q[..., :512] * lengths.sum() * 0
