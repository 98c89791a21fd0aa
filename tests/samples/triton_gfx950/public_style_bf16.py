#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample in the style of public Triton entries: one flash-decode program per sequence, the 16
# heads as the M dim, bf16 KV tiles of 32 tokens, online softmax in fp32, bf16 dots. Written for
# `harness run FILE --device gfx950` (its gfx950 code on the emulator) and the Triton interpreter.
import torch
import triton
import triton.language as tl

from task import input_t, output_t


@triton.jit
def decode_kernel(q_ptr, kv_ptr, kv_indptr_ptr, out_ptr, sm_scale,
                  HEADS: tl.constexpr, QK: tl.constexpr, DV: tl.constexpr, ROPE: tl.constexpr,
                  BLOCK: tl.constexpr):
    seq = tl.program_id(0)
    start = tl.load(kv_indptr_ptr + seq)
    end = tl.load(kv_indptr_ptr + seq + 1)
    heads = tl.arange(0, HEADS)
    values = tl.arange(0, DV)  # the latent part (the value too); the rope part follows it
    rope = DV + tl.arange(0, ROPE)
    q_rows = q_ptr + seq * HEADS * QK + heads[:, None] * QK
    q_latent = tl.load(q_rows + values[None, :])
    q_rope = tl.load(q_rows + rope[None, :])
    top = tl.full((HEADS,), float("-inf"), tl.float32)
    total = tl.zeros((HEADS,), tl.float32)
    acc = tl.zeros((HEADS, DV), tl.float32)
    for first in range(start, end, BLOCK):
        rows = first + tl.arange(0, BLOCK)
        live = rows < end
        kv_rows = kv_ptr + rows[:, None] * QK
        v = tl.load(kv_rows + values[None, :], mask=live[:, None], other=0.0)
        k_rope = tl.load(kv_rows + rope[None, :], mask=live[:, None], other=0.0)
        scores = (tl.dot(q_latent, tl.trans(v)) + tl.dot(q_rope, tl.trans(k_rope))) * sm_scale
        scores = tl.where(live[None, :], scores, float("-inf"))
        new_top = tl.maximum(top, tl.max(scores, 1))
        p = tl.exp(scores - new_top[:, None])
        fade = tl.exp(top - new_top)
        total = total * fade + tl.sum(p, 1)
        acc = acc * fade[:, None] + tl.dot(p.to(tl.bfloat16), v)
        top = new_top
    out = acc / total[:, None]
    tl.store(out_ptr + seq * HEADS * DV + heads[:, None] * DV + values[None, :], out.to(tl.bfloat16))


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv = kv_data["bf16"].reshape(-1, q.shape[-1]).contiguous()
    batch, heads, dv = config["batch_size"], q.shape[1], config["v_head_dim"]
    out = torch.empty((q.shape[0], heads, dv), dtype=torch.bfloat16, device=q.device)
    decode_kernel[(batch,)](q.contiguous(), kv, kv_indptr, out, config["sm_scale"],
                            HEADS=heads, QK=q.shape[-1], DV=dv, ROPE=q.shape[-1] - dv, BLOCK=32, num_warps=4)
    return out
