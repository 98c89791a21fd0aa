#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""001: the a8w8 MLA decode in plain torch - the baseline that runs everywhere, CPU included.

Same math as the official reference: Q quantized per-tensor to fp8 on the fly (the KV's fp8 flavour),
fp8 KV dequantized with its per-tensor scale, float32 scores and softmax, bf16 output.
Keys use all 576 dims, values the first 512. Consecutive sequences of equal length go through one
batched matmul; uneven kv_indptr segments are handled group by group.

fp8 values convert to bf16 exactly (3 mantissa bits fit in 7), so on a GPU the two matmuls run on
exact bf16 copies of the fp8 codes with the scales applied afterwards in float32; on a CPU they run
in float32, where bf16 matmuls are slow.
"""
import torch

from task import input_t, output_t

NUM_HEADS = 16
QK_HEAD_DIM = 576
V_HEAD_DIM = 512
# Largest working set (bytes of the converted KV) one batched matmul builds at once.
GROUP_BYTES_LIMIT = 1 << 30


def quantize_query_fp8(q: torch.Tensor, fp8: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """sglang per-tensor fp8: scale = max|q| / fp8_max (amax >= 1e-12); q8 = clamp(q / scale)."""
    finfo = torch.finfo(fp8)
    amax = q.abs().amax().to(torch.float32).clamp(min=1e-12)
    scale = amax / finfo.max
    q8 = (q.to(torch.float32) / scale).clamp(min=finfo.min, max=finfo.max).to(fp8)
    return q8, scale.reshape(1)


def matmul_dtype(device: torch.device) -> torch.dtype:
    """bf16 (exact for fp8 codes, fast) on GPUs; float32 on CPUs."""
    return torch.float32 if device.type == "cpu" else torch.bfloat16


def equal_length_groups(q_starts: list[int], kv_starts: list[int], kv_row_bytes: int) -> list[tuple[int, int]]:
    """[(first, end)] runs of consecutive sequences with equal q and kv lengths, each under GROUP_BYTES_LIMIT."""
    groups = []
    batch = len(q_starts) - 1
    first = 0
    for b in range(1, batch + 1):
        if b < batch:
            same_shape = (q_starts[b + 1] - q_starts[b] == q_starts[first + 1] - q_starts[first]
                          and kv_starts[b + 1] - kv_starts[b] == kv_starts[first + 1] - kv_starts[first])
            within_budget = (kv_starts[b + 1] - kv_starts[first]) * kv_row_bytes <= GROUP_BYTES_LIMIT
            if same_shape and within_budget:
                continue
        groups.append((first, b))
        first = b
    return groups


@torch.no_grad()
def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    kv8 = kv8.reshape(kv8.shape[0], -1)  # (total_kv, 576): one KV head
    q8, q_scale = quantize_query_fp8(q, kv8.dtype)
    heads, sm_scale = q.shape[1], float(config["sm_scale"])
    compute = matmul_dtype(q.device)
    score_scale = (q_scale * kv_scale.to(torch.float32) * sm_scale).reshape(1, 1, 1)

    q_starts, kv_starts = qo_indptr.tolist(), kv_indptr.tolist()
    out = torch.empty((q.shape[0], heads, V_HEAD_DIM), dtype=torch.bfloat16, device=q.device)
    row_bytes = kv8.shape[1] * torch.empty((), dtype=compute).element_size()
    for first, end in equal_length_groups(q_starts, kv_starts, row_bytes):
        n = end - first
        q_len = q_starts[first + 1] - q_starts[first]
        kv_len = kv_starts[first + 1] - kv_starts[first]
        if q_len == 0:
            continue
        rows = slice(q_starts[first], q_starts[end])
        if kv_len == 0:  # nothing to attend to: the reference's softmax of nothing is NaN, keep zeros defined
            out[rows] = 0
            continue
        qg = q8[rows].to(compute).reshape(n, q_len * heads, -1)
        kvg = kv8[kv_starts[first]:kv_starts[end]].to(compute).reshape(n, kv_len, -1)
        scores = torch.bmm(qg, kvg.transpose(1, 2)).to(torch.float32) * score_scale
        probs = torch.softmax(scores, dim=-1)
        values = torch.bmm(probs.to(compute), kvg[..., :V_HEAD_DIM]).to(torch.float32)
        out[rows] = (values * kv_scale.to(torch.float32)).reshape(n * q_len, heads, V_HEAD_DIM).to(torch.bfloat16)
    return out
