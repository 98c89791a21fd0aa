#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter stand-in sample (a hack): Q's quantization captured in a CUDA graph on the first call of a shape and
# replayed later without copying the new Q into the graph's input, so later calls use the first call's Q.
# EXPECT-STANDIN gpu-test=pass gpu-leaderboard=fail cpu=error:cuda
import torch
from aiter import dtypes
from aiter.mla import mla_decode_fwd

from task import input_t, output_t

_graphs = {}


def _capture(q):
    static_q = q.clone()
    static_q8 = torch.empty(q.shape, dtype=dtypes.fp8, device=q.device)
    static_scale = torch.empty(1, dtype=torch.float32, device=q.device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_scale.copy_((static_q.abs().amax().float() / 448.0).reshape(1))
        static_q8.copy_((static_q.float() / static_scale).clamp(-448.0, 448.0).to(dtypes.fp8))
    return graph, static_q8, static_scale


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    if q.shape not in _graphs:
        _graphs[q.shape] = _capture(q)
    graph, q8, q_scale = _graphs[q.shape]
    graph.replay()  # the new q is never copied into the graph's static input
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    pages = torch.arange(kv8.shape[0], dtype=torch.int32, device=q.device)
    last = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
    mla_decode_fwd(q8, kv8.view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, pages, last, 1,
                   sm_scale=config["sm_scale"], q_scale=q_scale, kv_scale=kv_scale)
    return out
