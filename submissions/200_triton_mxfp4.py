#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Portable Triton MLA decode (DeepSeek-R1 forward_absorb) over the MXFP4, fp8 or bf16 KV cache.

Design, in the order the work happens:
- Split-K (flash-decoding): program (split, sequence) walks one slice of one sequence's KV. Every
  64-token tile is loaded once and serves all 16 heads. Tokens are the M dim of both dots
  (S^T = K Q^T, O^T = V^T P^T), so on Hopper each dot is one warpgroup's wgmma with the KV tile
  read straight from shared memory; the 512 value dims are four 128-dim accumulator chunks.
- MXFP4: dequantization fused into the loop (fp16 bit trick: code bits at fp16 bits 15 and 11..9
  give value x 2^-14, the 2^14 folded into the e8m0 scale built as fp32 bits), one 128-dim chunk at a
  time; optionally the scores come from tl.dot_scaled on the packed bytes (QK_SCALED). Reads only the
  [:rows, :18] corner of the scales, with their real row stride (24 in aiter's padded layout).
- fp8: scores by an fp8 dot (Q quantized per head in the kernel), values upcast to bf16 per chunk.
- One split per sequence writes bf16 straight to the output; several write a normalized fp32
  partial and its log2-sum-exp, merged by a small reduce kernel. The split count comes from the
  batch, the mean KV length, the SM/CU count and how many programs fit per SM (a wave model);
  per-sequence slices are computed on the device from kv_indptr, so uneven lengths work and the
  host never synchronizes.
- Which KV format custom_kernel reads is DEFAULT_KV_FORMAT, chosen from measurements on an H200
  (bench/NOTES.md): there, Triton's MXFP4 decode costs more time than the bytes it saves.

Runs on NVIDIA and AMD (any torch device Triton supports) and under TRITON_INTERPRET=1 on a CPU.
"""
import os

import torch
import triton
import triton.language as tl

from task import input_t, output_t

NUM_HEADS = 16
QK_DIM = 576
V_DIM = 512
ROPE_DIM = QK_DIM - V_DIM
MX_BLOCK = 32  # MXFP4 elements per e8m0 scale
# The same numbers as kernel-side constants (a @triton.jit body may only read constexpr globals).
K_HEADS = tl.constexpr(NUM_HEADS)
K_QK_DIM = tl.constexpr(QK_DIM)
K_V_DIM = tl.constexpr(V_DIM)
K_ROPE_DIM = tl.constexpr(ROPE_DIM)
K_MX_BLOCK = tl.constexpr(MX_BLOCK)
K_CHUNK = tl.constexpr(128)  # value dims per accumulator chunk

# The interpreter multiplies bf16 dot operands as raw bits (triton issue 11584): use fp32 there.
INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") == "1"

# Per-shape launch plans: the only state this file keeps (never outputs).
_PLAN_CACHE: dict = {}


@triton.jit
def _e2m1_to_float(code, scale):
    """fp32 values of 4-bit E2M1 codes (int32 holding 0..15) times their block scale (already x 2^14)."""
    bits = ((code & 7) << 9) | ((code & 8) << 12)
    half = bits.to(tl.int16).to(tl.float16, bitcast=True)
    return half.to(tl.float32) * scale


@triton.jit
def _load_mxfp4_tile(data_ptr, scale_ptr, scale_stride, rows, row_ok,
                     FIRST_BLOCK: tl.constexpr, NUM_BLOCKS: tl.constexpr, DOT_DTYPE: tl.constexpr):
    """(rows, NUM_BLOCKS * 32) values of NUM_BLOCKS MXFP4 blocks starting at block FIRST_BLOCK, in dim order."""
    blk = tl.arange(0, NUM_BLOCKS)
    byte = tl.arange(0, 16)
    offs = (rows[:, None, None] * (K_QK_DIM // 2) + (blk + FIRST_BLOCK)[None, :, None] * 16
            + byte[None, None, :])
    packed = tl.load(data_ptr + offs, mask=row_ok[:, None, None], other=0).to(tl.int32)
    raw_scale = tl.load(scale_ptr + rows[:, None] * scale_stride + blk[None, :] + FIRST_BLOCK,
                        mask=row_ok[:, None], other=127).to(tl.int32)
    # e8m0 byte b -> 2^(b-127), times 2^14 to undo the fp16 bit trick: fp32 exponent field b + 14.
    scale = (tl.minimum(raw_scale + 14, 254) << 23).to(tl.float32, bitcast=True)[:, :, None, None]
    # Low nibble = even dim, high nibble = odd dim: join puts each pair side by side in one thread.
    codes = tl.join(packed & 15, packed >> 4)
    values = _e2m1_to_float(codes, scale).to(DOT_DTYPE)
    return tl.reshape(values, (rows.shape[0], NUM_BLOCKS * 32))


@triton.jit
def _kv_chunk(kv_ptr, kv_scale_ptr, kv_scale_stride, rows, row_ok, CHUNK: tl.constexpr,
              KV_FORMAT: tl.constexpr, DOT_DTYPE: tl.constexpr):
    """(rows, 128) dot-ready values of dims [128 CHUNK, 128 CHUNK + 128) of the KV rows."""
    if KV_FORMAT == "mxfp4":
        return _load_mxfp4_tile(kv_ptr, kv_scale_ptr, kv_scale_stride, rows, row_ok,
                                CHUNK * (K_CHUNK // K_MX_BLOCK), K_CHUNK // K_MX_BLOCK, DOT_DTYPE)
    else:
        dims = tl.arange(0, K_CHUNK)
        x = tl.load(kv_ptr + rows[:, None] * K_QK_DIM + CHUNK * K_CHUNK + dims[None, :], mask=row_ok[:, None],
                    other=0.0)
        return x.to(DOT_DTYPE)


@triton.jit
def _q_chunk_t(q_row, first_dim, width: tl.constexpr, DOT_DTYPE: tl.constexpr):
    """(width, 16) = Q[:, first_dim : first_dim + width]^T of one query row."""
    dims = tl.arange(0, width)
    return tl.load(q_row + first_dim + dims[:, None]).to(DOT_DTYPE)


@triton.jit
def _pv_chunks(kv_ptr, kv_scale_ptr, kv_scale_stride, rows, row_ok, pb, alpha, acc0, acc1, acc2, acc3,
               KV_FORMAT: tl.constexpr, DOT_DTYPE: tl.constexpr):
    """O^T chunk c += V_c^T P^T for the four 128-dim value chunks, each loaded (and decoded) on its own."""
    acc0 = tl.dot(tl.trans(_kv_chunk(kv_ptr, kv_scale_ptr, kv_scale_stride, rows, row_ok, 0, KV_FORMAT, DOT_DTYPE)),
                  pb, acc0 * alpha[None, :])
    acc1 = tl.dot(tl.trans(_kv_chunk(kv_ptr, kv_scale_ptr, kv_scale_stride, rows, row_ok, 1, KV_FORMAT, DOT_DTYPE)),
                  pb, acc1 * alpha[None, :])
    acc2 = tl.dot(tl.trans(_kv_chunk(kv_ptr, kv_scale_ptr, kv_scale_stride, rows, row_ok, 2, KV_FORMAT, DOT_DTYPE)),
                  pb, acc2 * alpha[None, :])
    acc3 = tl.dot(tl.trans(_kv_chunk(kv_ptr, kv_scale_ptr, kv_scale_stride, rows, row_ok, 3, KV_FORMAT, DOT_DTYPE)),
                  pb, acc3 * alpha[None, :])
    return acc0, acc1, acc2, acc3


@triton.jit
def mla_decode_split_kernel(
    q_ptr, q_stride_t, q_stride_h,
    kv_ptr, kv_scale_ptr, kv_scale_stride,
    kv_indptr_ptr,
    out_ptr, part_o_ptr, part_lse_ptr,
    sm_scale,
    num_splits,
    WRITE_FINAL: tl.constexpr,  # one split: write normalized bf16 output, no partials
    BLOCK_N: tl.constexpr,
    KV_FORMAT: tl.constexpr,   # "mxfp4", "fp8" or "bf16"
    DOT_DTYPE: tl.constexpr,   # tl.bfloat16 on a GPU, tl.float32 when interpreted
    QK_SCALED: tl.constexpr = False,  # MXFP4 scores by tl.dot_scaled on the packed bytes
    FP8_REUSE: tl.constexpr = False,  # fp8 values cut from the score tile instead of loaded again
):
    """One (split, sequence) pair: online-softmax attention of 16 heads over one slice of the KV.

    Tokens are the M dim of both dots (S^T = K Q^T, O^T = V^T P^T): M = BLOCK_N = 64 fills one
    warpgroup's wgmma on Hopper and the 16 heads are the N dim. The 512 value dims are handled as
    four 128-dim chunks with their own accumulators, so a decoded chunk is all that lives in registers.
    """
    split = tl.program_id(0)
    seq = tl.program_id(1)
    H: tl.constexpr = K_HEADS
    kv_start = tl.load(kv_indptr_ptr + seq)
    kv_end = tl.load(kv_indptr_ptr + seq + 1)
    # Slice length: a multiple of BLOCK_N, so only a sequence's last tile is ragged.
    per_split = tl.cdiv(tl.cdiv(kv_end - kv_start, num_splits), BLOCK_N) * BLOCK_N
    lo = kv_start + split * per_split
    hi = tl.minimum(lo + per_split, kv_end)

    heads = tl.arange(0, H)
    q_row = q_ptr + seq * q_stride_t + heads[None, :] * q_stride_h
    log2e: tl.constexpr = 1.4426950408889634
    qk_scale = sm_scale * log2e
    if KV_FORMAT == "fp8":
        # fp8 scores straight from the loaded tile: Q quantized per head to the KV's fp8 type.
        kv_scale = tl.load(kv_scale_ptr)
        qt_nope = _q_chunk_t(q_row, 0, K_V_DIM, tl.float32)
        qt_rope = _q_chunk_t(q_row, K_V_DIM, K_ROPE_DIM, tl.float32)
        amax = tl.maximum(tl.max(tl.abs(qt_nope), 0), tl.max(tl.abs(qt_rope), 0))
        q_scale = tl.maximum(amax, 1e-12) / 448.0
        fp8: tl.constexpr = kv_ptr.dtype.element_ty
        qt8_nope = (qt_nope / q_scale[None, :]).to(fp8)
        qt8_rope = (qt_rope / q_scale[None, :]).to(fp8)
        score_scale = qk_scale * kv_scale * q_scale  # (16,)
    else:
        qt0 = _q_chunk_t(q_row, 0 * K_CHUNK, K_CHUNK, DOT_DTYPE)
        qt1 = _q_chunk_t(q_row, 1 * K_CHUNK, K_CHUNK, DOT_DTYPE)
        qt2 = _q_chunk_t(q_row, 2 * K_CHUNK, K_CHUNK, DOT_DTYPE)
        qt3 = _q_chunk_t(q_row, 3 * K_CHUNK, K_CHUNK, DOT_DTYPE)
        qt_rope = _q_chunk_t(q_row, K_V_DIM, K_ROPE_DIM, DOT_DTYPE)
        score_scale = tl.full((H,), 1.0, tl.float32) * qk_scale
    m_i = tl.full((H,), float("-inf"), tl.float32)
    l_i = tl.zeros((H,), tl.float32)
    acc0 = tl.zeros((K_CHUNK, H), tl.float32)  # O^T, value dims [0, 128)
    acc1 = tl.zeros((K_CHUNK, H), tl.float32)
    acc2 = tl.zeros((K_CHUNK, H), tl.float32)
    acc3 = tl.zeros((K_CHUNK, H), tl.float32)
    tok = tl.arange(0, BLOCK_N)
    for start in range(lo, hi, BLOCK_N):
        rows = start + tok
        ok = rows < hi
        if KV_FORMAT == "fp8":
            d = tl.arange(0, K_V_DIM)
            r = tl.arange(0, K_ROPE_DIM)
            k8 = tl.load(kv_ptr + rows[:, None] * K_QK_DIM + d[None, :], mask=ok[:, None], other=0.0)
            kr8 = tl.load(kv_ptr + rows[:, None] * K_QK_DIM + K_V_DIM + r[None, :], mask=ok[:, None], other=0.0)
            s = tl.dot(k8, qt8_nope)
            s = tl.dot(kr8, qt8_rope, s)
        elif KV_FORMAT == "mxfp4" and QK_SCALED:
            # Scores straight from the packed bytes (Triton upcasts where the GPU has no scaled MMA).
            pk = tl.arange(0, K_CHUNK // 2)
            sb = tl.arange(0, K_CHUNK // K_MX_BLOCK)
            s = tl.zeros((BLOCK_N, H), tl.float32)
            for c in tl.static_range(4):
                packed = tl.load(kv_ptr + rows[:, None] * (K_QK_DIM // 2) + c * (K_CHUNK // 2) + pk[None, :],
                                 mask=ok[:, None], other=0)
                scales = tl.load(kv_scale_ptr + rows[:, None] * kv_scale_stride + c * (K_CHUNK // K_MX_BLOCK)
                                 + sb[None, :], mask=ok[:, None], other=127)
                qt = _q_chunk_t(q_row, c * K_CHUNK, K_CHUNK, DOT_DTYPE)
                if DOT_DTYPE == tl.float32:  # interpreted: fp16 is the 16-bit operand it multiplies right
                    s = tl.dot_scaled(packed, scales, "e2m1", qt.to(tl.float16), None, "fp16", acc=s)
                else:
                    s = tl.dot_scaled(packed, scales, "e2m1", qt, None, "bf16", acc=s)
            s = tl.dot(_load_mxfp4_tile(kv_ptr, kv_scale_ptr, kv_scale_stride, rows, ok, K_V_DIM // K_MX_BLOCK,
                                        K_ROPE_DIM // K_MX_BLOCK, DOT_DTYPE), qt_rope, s)
        else:
            s = tl.dot(_kv_chunk(kv_ptr, kv_scale_ptr, kv_scale_stride, rows, ok, 0, KV_FORMAT, DOT_DTYPE), qt0)
            s = tl.dot(_kv_chunk(kv_ptr, kv_scale_ptr, kv_scale_stride, rows, ok, 1, KV_FORMAT, DOT_DTYPE), qt1, s)
            s = tl.dot(_kv_chunk(kv_ptr, kv_scale_ptr, kv_scale_stride, rows, ok, 2, KV_FORMAT, DOT_DTYPE), qt2, s)
            s = tl.dot(_kv_chunk(kv_ptr, kv_scale_ptr, kv_scale_stride, rows, ok, 3, KV_FORMAT, DOT_DTYPE), qt3, s)
            if KV_FORMAT == "mxfp4":
                k_rope = _load_mxfp4_tile(kv_ptr, kv_scale_ptr, kv_scale_stride, rows, ok, K_V_DIM // K_MX_BLOCK,
                                          K_ROPE_DIM // K_MX_BLOCK, DOT_DTYPE)
            else:
                r = tl.arange(0, K_ROPE_DIM)
                k_rope = tl.load(kv_ptr + rows[:, None] * K_QK_DIM + K_V_DIM + r[None, :], mask=ok[:, None],
                                 other=0.0).to(DOT_DTYPE)
            s = tl.dot(k_rope, qt_rope, s)  # (BLOCK_N, 16) scores^T
        s = tl.where(ok[:, None], s * score_scale[None, :], float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 0))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[None, :])
        l_i = l_i * alpha + tl.sum(p, 0)
        pb = p.to(DOT_DTYPE)
        if KV_FORMAT == "fp8" and FP8_REUSE:
            # The four 128-dim value chunks cut out of the tile already loaded for the scores.
            quad = tl.permute(tl.reshape(k8, (BLOCK_N, 2, 2, K_CHUNK)), (0, 3, 1, 2))
            half0, half1 = tl.split(quad)  # by bit 0 of the chunk index
            v0, v2 = tl.split(half0)
            v1, v3 = tl.split(half1)
            acc0 = tl.dot(tl.trans(v0.to(DOT_DTYPE)), pb, acc0 * alpha[None, :])
            acc1 = tl.dot(tl.trans(v1.to(DOT_DTYPE)), pb, acc1 * alpha[None, :])
            acc2 = tl.dot(tl.trans(v2.to(DOT_DTYPE)), pb, acc2 * alpha[None, :])
            acc3 = tl.dot(tl.trans(v3.to(DOT_DTYPE)), pb, acc3 * alpha[None, :])
        else:
            # Values are the first 512 dims of the same rows: one chunk decoded at a time.
            acc0, acc1, acc2, acc3 = _pv_chunks(kv_ptr, kv_scale_ptr, kv_scale_stride, rows, ok, pb, alpha,
                                                acc0, acc1, acc2, acc3, KV_FORMAT, DOT_DTYPE)
        m_i = m_new

    # An empty slice (short sequence, many splits) has l_i = 0: it writes zeros and lse = -inf.
    safe_l = tl.where(l_i > 0, l_i, 1.0)
    norm = 1.0 / safe_l
    if KV_FORMAT == "fp8":
        norm = norm * kv_scale
    f = tl.arange(0, K_CHUNK)
    if WRITE_FINAL:
        dst = out_ptr + seq * H * K_V_DIM + heads[None, :] * K_V_DIM + f[:, None]
        tl.store(dst + 0 * K_CHUNK, (acc0 * norm[None, :]).to(tl.bfloat16))
        tl.store(dst + 1 * K_CHUNK, (acc1 * norm[None, :]).to(tl.bfloat16))
        tl.store(dst + 2 * K_CHUNK, (acc2 * norm[None, :]).to(tl.bfloat16))
        tl.store(dst + 3 * K_CHUNK, (acc3 * norm[None, :]).to(tl.bfloat16))
    else:
        lse = tl.where(l_i > 0, m_i + tl.log2(safe_l), float("-inf"))
        part = (seq * num_splits + split) * H
        dst = part_o_ptr + (part + heads[None, :]) * K_V_DIM + f[:, None]
        tl.store(dst + 0 * K_CHUNK, acc0 * norm[None, :])
        tl.store(dst + 1 * K_CHUNK, acc1 * norm[None, :])
        tl.store(dst + 2 * K_CHUNK, acc2 * norm[None, :])
        tl.store(dst + 3 * K_CHUNK, acc3 * norm[None, :])
        tl.store(part_lse_ptr + part + heads, lse)


@triton.jit
def mla_reduce_kernel(part_o_ptr, part_lse_ptr, out_ptr, num_splits, SPLITS_POW2: tl.constexpr):
    """Merge the num_splits normalized partials of one (sequence, head) by their log2-sum-exp weights."""
    seq = tl.program_id(0)
    head = tl.program_id(1)
    H: tl.constexpr = K_HEADS
    splits = tl.arange(0, SPLITS_POW2)
    live = splits < num_splits
    rows = (seq * num_splits + splits) * H + head
    lse = tl.load(part_lse_ptr + rows, mask=live, other=float("-inf"))
    weights = tl.exp2(lse - tl.max(lse, 0))
    weights = weights / tl.sum(weights, 0)
    dims = tl.arange(0, K_V_DIM)
    parts = tl.load(part_o_ptr + rows[:, None] * K_V_DIM + dims[None, :], mask=live[:, None], other=0.0)
    o = tl.sum(parts * weights[:, None], 0)
    tl.store(out_ptr + (seq * H + head) * K_V_DIM + dims, o.to(tl.bfloat16))


def _compute_units(device: torch.device) -> int:
    if device.type == "cpu":
        return 4  # the CPU interpreter: few splits keep it quick
    return torch.cuda.get_device_properties(device).multi_processor_count  # SMs on NVIDIA, CUs on AMD


def choose_splits(batch: int, mean_kv: int, compute_units: int, block_n: int, programs_per_cu: int = 2) -> int:
    """Splits per sequence that minimize (waves of programs) x (tiles per program), slices >= 128 tokens.

    A wave is compute_units x programs_per_cu programs running at once; a program walks its slice
    tile by tile. Splitting costs a reduce launch (~2 tiles) plus, per (sequence, split), a 32 KB
    partial written and read back (~1 tile of time spread over the device), so batches that already
    fill the device keep one split and skip the reduce.
    """
    slots = compute_units * programs_per_cu
    most = max(1, min(64, mean_kv // 128))
    best, best_cost = 1, None
    for splits in range(1, most + 1):
        waves = -(-batch * splits // slots)
        tiles = -(-(-(-mean_kv // splits)) // block_n)
        cost = waves * tiles + (2.0 + batch * splits / slots if splits > 1 else 0.0)
        if best_cost is None or cost < best_cost - 1e-9:
            best, best_cost = splits, cost
    return best


def _programs_per_cu(device: torch.device, kv_format: str) -> int:
    """Programs that fit on one SM/CU at once (from the AOT report: bf16 tiles fill an H200 SM's shared memory)."""
    if device.type == "cpu" or torch.version.hip or kv_format == "bf16":
        return 1
    return 2


# KV format per platform, from the H200 measurements in bench/NOTES.md: Triton's MXFP4 decode costs
# ~10k lane-ops per token (4x the MXFP4 byte budget), so the bf16 tile that wgmma reads straight from
# shared memory wins there. Unmeasured GPUs take the same choice.
DEFAULT_KV_FORMAT = "bf16"
# Per-format launch defaults (num_stages: software-pipelining depth that the AOT report shows fits).
FORMAT_DEFAULTS = {"bf16": {"num_stages": 2}, "fp8": {"num_stages": 1}, "mxfp4": {"num_stages": 2}}


def _plan(q: torch.Tensor, total_kv: int, batch: int, kv_format: str, tuning: dict) -> dict:
    """Launch parameters and scratch buffers for one shape, cached."""
    key = (q.device, q.shape[0], total_kv, batch, kv_format, tuple(sorted(tuning.items())))
    plan = _PLAN_CACHE.get(key)
    if plan is None:
        plan = {"block_n": 64, "num_warps": 4, "qk_scaled": 0, "fp8_reuse": 0, "splits": None}
        plan.update(FORMAT_DEFAULTS[kv_format])
        plan.update(tuning)
        if plan["splits"] is None:
            plan["splits"] = choose_splits(batch, max(1, total_kv // batch), _compute_units(q.device),
                                           plan["block_n"], _programs_per_cu(q.device, kv_format))
        rows = batch * plan["splits"] * NUM_HEADS
        if plan["splits"] > 1:
            plan["part_o"] = torch.empty((rows, V_DIM), dtype=torch.float32, device=q.device)
            plan["part_lse"] = torch.empty((rows,), dtype=torch.float32, device=q.device)
        _PLAN_CACHE[key] = plan
    return plan


def mla_decode(data: input_t, kv_format: str = DEFAULT_KV_FORMAT, **tuning) -> output_t:
    """The decode with a chosen KV format ("mxfp4" or "fp8"); tuning may force splits, block_n, num_warps."""
    q, kv_data, qo_indptr, kv_indptr, config = data
    batch = config["batch_size"]
    if q.shape[0] != batch:
        raise ValueError(f"only q_seq_len = 1 is supported, got {q.shape[0]} queries for {batch} sequences")
    if q.stride(-1) != 1:
        q = q.contiguous()
    if kv_format not in FORMAT_DEFAULTS:
        raise ValueError(f"unknown KV format {kv_format!r}: use 'mxfp4', 'fp8' or 'bf16'")
    if kv_format == "mxfp4":
        packed, scales = kv_data["mxfp4"]
        kv = packed.view(torch.uint8).reshape(packed.shape[0], QK_DIM // 2)
        kv_scale = scales.view(torch.uint8)
        scale_stride = kv_scale.stride(0)  # 24 in aiter's (cdiv(M, 256) * 256, 24) layout; never assumed
    elif kv_format == "fp8":
        kv8, kv_scale = kv_data["fp8"]
        kv = kv8.reshape(kv8.shape[0], QK_DIM)
        scale_stride = 0
    elif kv_format == "bf16":
        kv = kv_data["bf16"].reshape(-1, QK_DIM)
        kv_scale, scale_stride = kv, 0  # no scale: the pointer is never read
    else:
        raise ValueError(f"unknown KV format {kv_format!r}: use 'mxfp4', 'fp8' or 'bf16'")
    plan = _plan(q, kv.shape[0], batch, kv_format, tuning)
    out = torch.empty((batch, NUM_HEADS, V_DIM), dtype=torch.bfloat16, device=q.device)
    splits = plan["splits"]
    part_o, part_lse = (plan["part_o"], plan["part_lse"]) if splits > 1 else (out, out)
    mla_decode_split_kernel[(splits, batch)](
        q, q.stride(0), q.stride(1),
        kv, kv_scale, scale_stride,
        kv_indptr,
        out, part_o, part_lse,
        float(config["sm_scale"]), splits,
        WRITE_FINAL=splits == 1, BLOCK_N=plan["block_n"], KV_FORMAT=kv_format,
        DOT_DTYPE=tl.float32 if INTERPRETED else tl.bfloat16, QK_SCALED=bool(plan["qk_scaled"]),
        FP8_REUSE=bool(plan["fp8_reuse"]),
        num_warps=plan["num_warps"], num_stages=plan["num_stages"],
    )
    if splits > 1:
        mla_reduce_kernel[(batch, NUM_HEADS)](
            part_o, part_lse, out, splits, SPLITS_POW2=triton.next_power_of_2(splits), num_warps=4,
        )
    return out


def custom_kernel(data: input_t) -> output_t:
    return mla_decode(data)


# Representative launches for ahead-of-time compilation (harness/compile/aot.py documents the convention).
_SPLIT_ARGS = {
    "q_ptr": "*bf16:16", "q_stride_t": "i32:16", "q_stride_h": "i32:16",
    "kv_ptr": "*u8:16", "kv_scale_ptr": "*u8:16", "kv_scale_stride": "i32",
    "kv_indptr_ptr": "*i32:16", "out_ptr": "*bf16:16", "part_o_ptr": "*fp32:16", "part_lse_ptr": "*fp32:16",
    "sm_scale": "fp32", "num_splits": "i32",
}
AOT_SPECS = [
    {"kernel": "mla_decode_split_kernel", "label": "mxfp4, split partials", "signature": _SPLIT_ARGS,
     "constexprs": {"WRITE_FINAL": False, "BLOCK_N": 64, "KV_FORMAT": "mxfp4", "DOT_DTYPE": tl.bfloat16},
     "num_warps": 4, "num_stages": 2},
    {"kernel": "mla_decode_split_kernel", "label": "mxfp4, final output", "signature": _SPLIT_ARGS,
     "constexprs": {"WRITE_FINAL": True, "BLOCK_N": 64, "KV_FORMAT": "mxfp4", "DOT_DTYPE": tl.bfloat16},
     "num_warps": 4},
    {"kernel": "mla_decode_split_kernel", "label": "fp8, split partials",
     "signature": {**_SPLIT_ARGS, "kv_ptr": "*fp8e4nv:16", "kv_scale_ptr": "*fp32:16"},
     "constexprs": {"WRITE_FINAL": False, "BLOCK_N": 64, "KV_FORMAT": "fp8", "DOT_DTYPE": tl.bfloat16},
     "num_warps": 4, "num_stages": 1},
    {"kernel": "mla_decode_split_kernel", "label": "mxfp4, scores by dot_scaled", "signature": _SPLIT_ARGS,
     "constexprs": {"WRITE_FINAL": False, "BLOCK_N": 64, "KV_FORMAT": "mxfp4", "DOT_DTYPE": tl.bfloat16,
                    "QK_SCALED": True},
     "num_warps": 4},
    {"kernel": "mla_decode_split_kernel", "label": "bf16, split partials",
     "signature": {**_SPLIT_ARGS, "kv_ptr": "*bf16:16", "kv_scale_ptr": "*bf16:16"},
     "constexprs": {"WRITE_FINAL": False, "BLOCK_N": 64, "KV_FORMAT": "bf16", "DOT_DTYPE": tl.bfloat16},
     "num_warps": 4, "num_stages": 2},
    {"kernel": "mla_decode_split_kernel", "label": "fp8, values cut from the score tile",
     "signature": {**_SPLIT_ARGS, "kv_ptr": "*fp8e4nv:16", "kv_scale_ptr": "*fp32:16"},
     "constexprs": {"WRITE_FINAL": False, "BLOCK_N": 64, "KV_FORMAT": "fp8", "DOT_DTYPE": tl.bfloat16,
                    "FP8_REUSE": True},
     "num_warps": 4, "num_stages": 3},
    {"kernel": "mla_decode_split_kernel", "label": "bf16, final output",
     "signature": {**_SPLIT_ARGS, "kv_ptr": "*bf16:16", "kv_scale_ptr": "*bf16:16"},
     "constexprs": {"WRITE_FINAL": True, "BLOCK_N": 64, "KV_FORMAT": "bf16", "DOT_DTYPE": tl.bfloat16},
     "num_warps": 4, "num_stages": 2},
    {"kernel": "mla_reduce_kernel", "label": "merge 8 splits",
     "signature": {"part_o_ptr": "*fp32:16", "part_lse_ptr": "*fp32:16", "out_ptr": "*bf16:16", "num_splits": "i32"},
     "constexprs": {"SPLITS_POW2": 8}, "num_warps": 4},
]
