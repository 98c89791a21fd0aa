#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Portable Triton MLA decode (DeepSeek-R1 forward_absorb) over the fp8 KV cache: half the bytes of bf16.

Why fp8: the best bf16 kernels already run at ~97% of the H200's copy bandwidth, so only fewer bytes per
token can beat them; fp8 reads 576 B per token (bf16 1152) and needs no software decode on either vendor
(Hopper wgmma and gfx950 MFMA both take e4m3 operands). bench/NOTES.md (issue 12) has the measurements.

Work layout, per (split, sequence) program:
- Q is quantized once per program to the KV's fp8 type with one scale per head.
- Every BLOCK_N-token tile is loaded once and serves all 16 heads. Tokens are the M dim of the score dot
  (S^T = K Q^T, fp8 x fp8, fp32 accumulate), so on Hopper it is one warpgroup's wgmma with the tile read
  from shared memory, and on gfx950 an fp8 MFMA.
- Values are the first 512 dims of the same rows. P.V contracts over tokens, which Hopper's fp8 wgmma
  cannot take from a token-major tile: the NVIDIA default loads the four 128-dim value chunks again (L2
  hits) and upcasts them to fp16 (exact for e4m3; P in fp16), PV_CHUNKS = 4 with CHUNKS_RELOAD. The ROCm
  default keeps P.V in fp8 on the score tile (PV_FP8, P scaled by 2^8 into e4m3's normal range), which
  gfx950 reads with its transposing LDS load: fp8 MFMAs for both dots, no conversion.
- Several splits of one sequence: each writes a normalized fp32 partial plus its log2-sum-exp, merged by
  a (sequence, head) kernel (default), or with FUSED_REDUCE by the program that finishes last for a
  sequence (an atomic counter, reset by that program). One split writes bf16 directly.
- The split count comes from a wave model (programs per SM/CU from the compiler's resource figures).
- On triton 3.6 / sm90 two options hit an illegal memory access on the device (cause not found): fp16
  P.V on the score tile (pv_fp8=0 with pv_chunks=1, reload=0) and on a V^T reload (pv_chunks=1, reload=1).
  They stay as options for other platforms; the NVIDIA default avoids both.

Hopper default (sm90 with triton.experimental.gluon, e.g. the H200's triton 3.6): a Gluon kernel with explicit
layouts and shared memory, mla_fp8_gluon_kernel. KV tiles come in by TMA (2 stages, mbarrier waits; `tma=0`: by
cp.async); both dots are fp8 x fp8 wgmma (tokens as M for the scores, value dims as M for P.V). V^T is the P.V wgmma's register operand
(vt_rows=0): each thread loads its 8 value dims x 16 tokens with conflict-free 8-byte shared loads and relabels
them in registers (PRMT), with the token order of P^T permuted alike and the dim order undone at the output, so
no V^T is written to shared memory; two programs per SM (84 KB of shared memory each). vt_rows=256 / 512 keep
the earlier V^T buffer in shared memory. `gluon=0` selects the Triton kernel above on any platform (the earlier
NVIDIA default: pv_chunks=4, reload=1). Options measured and not taken (bench/NOTES.md, issue 20): gluon_block=128
(two warpgroups per program on 128-token tiles), stages 1, 3 or 4, bf16 partials for the merge kernels. `trace=<int64 tensor>` records
each program's start, first tile and end (%globaltimer) and SM for bench/tools/trace_201.py.
Issue 31: with a KV of at most 4x the L2, the TMA tile copies carry an L2 evict-first policy (a PTX stage added to
Triton's pipeline rewrites the marked kernel's copies, see l2_evict_first_ptx), so that the dirty lines a cache flush
leaves behind are not what the KV's lines evict. With the fused merge, each split stores its partial in bf16 straight
from the P.V accumulator (direct_partials), in a word order of its own that the merging splits read back. Option
cluster_merge=1 (not the default: measured slower, bench/notes/2026-12-04-issue31-floors.md): the splits of a
sequence form one thread-block cluster and exchange those words by bulk copies into distributed shared memory instead.

Issue 20: on sm90 the splits of a sequence merge it themselves (fused_merge): the launch is cooperative (every program
resident), each split stores its partial, takes a ticket from a per-sequence counter that only grows, waits until
its sequence's last ticket is out, and merges 1/splits of the output; one launch in all. Where that does not apply
(a split count not a power of two, a grid larger than the device holds at once) the merge kernel runs as a
programmatic dependent of the split kernel (PDL), by 128-dim slices with few sequences and many splits. On gfx950 the fp8 kernel takes 32-token tiles without software pipelining
(2 waves per SIMD). Option mxfp4=1: an MXFP4-KV kernel, mla_mxfp4_kernel (scores by a scaled dot on the e2m1 bytes
and e8m0 scales as they come; see its section), not custom_kernel's choice anywhere (bench/NOTES.md says why).

custom_kernel picks the launch options per platform (torch.version.hip / device capability). Runs on
NVIDIA, AMD and under TRITON_INTERPRET=1 on a CPU (the Triton kernel; the Gluon one is sm90-only).
"""
import os
import re
import zlib

import torch
import triton
import triton.language as tl

from task import input_t, output_t

NUM_HEADS = 16
QK_DIM = 576
V_DIM = 512
ROPE_DIM = QK_DIM - V_DIM
K_HEADS = tl.constexpr(NUM_HEADS)
K_QK_DIM = tl.constexpr(QK_DIM)
K_V_DIM = tl.constexpr(V_DIM)
K_ROPE_DIM = tl.constexpr(ROPE_DIM)

INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") == "1"
# CLUSTER_MERGE's area past Triton's shared memory (byte offsets from xchg_offset): the words received from every
# split (16 KB of bf16), their log2-sum-exps (at most 16 splits x 64 B), the exchange mbarrier, then this split's own
# words and log2-sum-exps staged for the bulk copies (16-byte aligned, as cp.async.bulk wants).
X_RECV_LSE = tl.constexpr(V_DIM * NUM_HEADS * 2)
X_MBAR = tl.constexpr(X_RECV_LSE.value + 16 * 64)
X_STAGE = tl.constexpr(X_MBAR.value + 128)
X_STAGE_LSE = tl.constexpr(X_STAGE.value + V_DIM * NUM_HEADS * 2)
X_BYTES = X_STAGE_LSE.value + NUM_HEADS * 4

_PLAN_CACHE: dict = {}  # per-shape launch plans and scratch buffers (never outputs)


@triton.jit
def _merge_splits(part_o_ptr, part_lse_ptr, out_ptr, seq, num_splits, SPLITS_POW2: tl.constexpr,
                  ATOMIC_READ: tl.constexpr):
    """out[seq] = the log2-sum-exp weighted sum of the num_splits normalized partials, all 16 heads."""
    H: tl.constexpr = K_HEADS
    splits = tl.arange(0, SPLITS_POW2)
    heads = tl.arange(0, H)
    dims = tl.arange(0, K_V_DIM)
    first = seq * num_splits * H
    rows = first + splits[:, None] * H + heads[None, :]  # (splits, heads)
    live = splits[:, None] < num_splits
    if ATOMIC_READ:  # written by other programs of this launch: read past the (non-coherent) L1
        lse = tl.load(part_lse_ptr + rows, mask=live, other=float("-inf"), cache_modifier=".cg")
    else:
        lse = tl.load(part_lse_ptr + rows, mask=live, other=float("-inf"))
    top = tl.max(lse, 0)
    top = tl.where(top == float("-inf"), 0.0, top)
    total = tl.maximum(tl.sum(tl.exp2(lse - top[None, :]), 0), 1e-30)
    o = tl.zeros((H, K_V_DIM), tl.float32)
    for split in range(0, num_splits):
        row = first + split * H + heads
        if ATOMIC_READ:
            w = tl.exp2(tl.load(part_lse_ptr + row, cache_modifier=".cg") - top)
            part = tl.load(part_o_ptr + row[:, None] * K_V_DIM + dims[None, :], cache_modifier=".cg")
        else:
            w = tl.exp2(tl.load(part_lse_ptr + row) - top)
            part = tl.load(part_o_ptr + row[:, None] * K_V_DIM + dims[None, :])
        o += part * w[:, None]
    o = o / total[:, None]
    tl.store(out_ptr + (seq * H + heads[:, None]) * K_V_DIM + dims[None, :], o.to(tl.bfloat16))


@triton.jit
def _split_slice(kv_indptr_ptr, seq, split, num_splits, BLOCK_N: tl.constexpr):
    """[lo, hi) of this split's KV rows: the sequence cut into num_splits slices of whole BLOCK_N tiles."""
    kv_start = tl.load(kv_indptr_ptr + seq)
    kv_end = tl.load(kv_indptr_ptr + seq + 1)
    per_split = tl.cdiv(tl.cdiv(kv_end - kv_start, num_splits), BLOCK_N) * BLOCK_N
    lo = kv_start + split * per_split
    return lo, tl.minimum(lo + per_split, kv_end)


@triton.jit
def mla_fp8_kernel(
    q_ptr, q_stride_t, q_stride_h,
    kv_ptr, kv_scale_ptr,
    kv_indptr_ptr,
    out_ptr, part_o_ptr, part_lse_ptr, counter_ptr,
    sm_scale,
    num_splits,
    WRITE_FINAL: tl.constexpr,   # one split per sequence: normalized bf16 straight to the output
    FUSED_REDUCE: tl.constexpr,  # several splits: the last program of a sequence merges them
    SPLITS_POW2: tl.constexpr,
    BLOCK_N: tl.constexpr,
    PV_FP8: tl.constexpr,        # P.V in fp8 (P x 2^8 in e4m3) instead of fp16
    PV_CHUNKS: tl.constexpr = 1,  # 1: one 512-dim P.V dot; 4: four 128-dim dots on reloaded chunks
    CHUNKS_RELOAD: tl.constexpr = False,  # load the values again (an L2 hit) instead of reusing the score tile
    EARLY_V: tl.constexpr = False,  # PV_CHUNKS 4: issue the value loads with the score tile's
):
    split = tl.program_id(0)
    seq = tl.program_id(1)
    H: tl.constexpr = K_HEADS
    lo, hi = _split_slice(kv_indptr_ptr, seq, split, num_splits, BLOCK_N)

    heads = tl.arange(0, H)
    dn = tl.arange(0, K_V_DIM)
    dr = tl.arange(0, K_ROPE_DIM)
    q_row = q_ptr + seq * q_stride_t + heads[None, :] * q_stride_h
    qt_nope = tl.load(q_row + dn[:, None]).to(tl.float32)  # (512, 16) = Q^T
    qt_rope = tl.load(q_row + K_V_DIM + dr[:, None]).to(tl.float32)  # (64, 16)
    amax = tl.maximum(tl.max(tl.abs(qt_nope), 0), tl.max(tl.abs(qt_rope), 0))
    q_scale = tl.maximum(amax, 1e-12) / 448.0
    fp8: tl.constexpr = kv_ptr.dtype.element_ty
    qt8_nope = (qt_nope / q_scale[None, :]).to(fp8)
    qt8_rope = (qt_rope / q_scale[None, :]).to(fp8)
    kv_scale = tl.load(kv_scale_ptr)
    log2e: tl.constexpr = 1.4426950408889634
    score_scale = (sm_scale * log2e * kv_scale) * q_scale  # (16,)

    m_i = tl.full((H,), float("-inf"), tl.float32)
    l_i = tl.zeros((H,), tl.float32)
    acc = tl.zeros((K_V_DIM, H), tl.float32)  # O^T (PV_CHUNKS == 1)
    acc0 = tl.zeros((128, H), tl.float32)  # O^T by 128-dim chunks (PV_CHUNKS == 4)
    acc1 = tl.zeros((128, H), tl.float32)
    acc2 = tl.zeros((128, H), tl.float32)
    acc3 = tl.zeros((128, H), tl.float32)
    tok = tl.arange(0, BLOCK_N)
    dc = tl.arange(0, 128)
    for start in range(lo, hi, BLOCK_N):
        rows = start + tok
        ok = rows < hi
        k8 = tl.load(kv_ptr + rows[:, None] * K_QK_DIM + dn[None, :], mask=ok[:, None], other=0.0)
        kr8 = tl.load(kv_ptr + rows[:, None] * K_QK_DIM + K_V_DIM + dr[None, :], mask=ok[:, None], other=0.0)
        if EARLY_V:  # the value chunks requested together with the score tile: one memory latency per tile
            v0 = tl.load(kv_ptr + rows[:, None] * K_QK_DIM + 0 + dc[None, :], mask=ok[:, None], other=0.0)
            v1 = tl.load(kv_ptr + rows[:, None] * K_QK_DIM + 128 + dc[None, :], mask=ok[:, None], other=0.0)
            v2 = tl.load(kv_ptr + rows[:, None] * K_QK_DIM + 256 + dc[None, :], mask=ok[:, None], other=0.0)
            v3 = tl.load(kv_ptr + rows[:, None] * K_QK_DIM + 384 + dc[None, :], mask=ok[:, None], other=0.0)
        s = tl.dot(k8, qt8_nope)
        s = tl.dot(kr8, qt8_rope, s)  # (BLOCK_N, 16) = scores^T
        s = tl.where(ok[:, None], s * score_scale[None, :], float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 0))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[None, :])
        l_i = l_i * alpha + tl.sum(p, 0)
        if PV_FP8:
            pb = (p * 256.0).to(fp8)
        else:
            pb = p.to(tl.float16)
        if PV_CHUNKS == 1:
            if CHUNKS_RELOAD:  # V^T (512, BLOCK_N) loaded again (an L2 hit), dims contiguous per thread
                vt = tl.load(kv_ptr + rows[None, :] * K_QK_DIM + dn[:, None], mask=ok[None, :], other=0.0)
            else:
                vt = tl.trans(k8)
            if PV_FP8:
                acc = tl.dot(vt, pb, acc * alpha[None, :])
            else:
                acc = tl.dot(vt.to(tl.float16), pb, acc * alpha[None, :])
        else:
            if not EARLY_V:  # each 128-dim value chunk loaded again (an L2 hit) in its own layout
                v0 = tl.load(kv_ptr + rows[:, None] * K_QK_DIM + 0 + dc[None, :], mask=ok[:, None], other=0.0)
                v1 = tl.load(kv_ptr + rows[:, None] * K_QK_DIM + 128 + dc[None, :], mask=ok[:, None], other=0.0)
                v2 = tl.load(kv_ptr + rows[:, None] * K_QK_DIM + 256 + dc[None, :], mask=ok[:, None], other=0.0)
                v3 = tl.load(kv_ptr + rows[:, None] * K_QK_DIM + 384 + dc[None, :], mask=ok[:, None], other=0.0)
            if PV_FP8:
                acc0 = tl.dot(tl.trans(v0), pb, acc0 * alpha[None, :])
                acc1 = tl.dot(tl.trans(v1), pb, acc1 * alpha[None, :])
                acc2 = tl.dot(tl.trans(v2), pb, acc2 * alpha[None, :])
                acc3 = tl.dot(tl.trans(v3), pb, acc3 * alpha[None, :])
            else:
                acc0 = tl.dot(tl.trans(v0.to(tl.float16)), pb, acc0 * alpha[None, :])
                acc1 = tl.dot(tl.trans(v1.to(tl.float16)), pb, acc1 * alpha[None, :])
                acc2 = tl.dot(tl.trans(v2.to(tl.float16)), pb, acc2 * alpha[None, :])
                acc3 = tl.dot(tl.trans(v3.to(tl.float16)), pb, acc3 * alpha[None, :])
        m_i = m_new

    safe_l = tl.where(l_i > 0, l_i, 1.0)
    norm = kv_scale / safe_l
    if PV_FP8:
        norm = norm * (1.0 / 256.0)
    if WRITE_FINAL:
        dst = out_ptr + seq * H * K_V_DIM + heads[None, :] * K_V_DIM
        if PV_CHUNKS == 1:
            tl.store(dst + dn[:, None], (acc * norm[None, :]).to(tl.bfloat16))
        else:
            tl.store(dst + 0 + dc[:, None], (acc0 * norm[None, :]).to(tl.bfloat16))
            tl.store(dst + 128 + dc[:, None], (acc1 * norm[None, :]).to(tl.bfloat16))
            tl.store(dst + 256 + dc[:, None], (acc2 * norm[None, :]).to(tl.bfloat16))
            tl.store(dst + 384 + dc[:, None], (acc3 * norm[None, :]).to(tl.bfloat16))
    else:
        lse = tl.where(l_i > 0, m_i + tl.log2(safe_l), float("-inf"))
        part = (seq * num_splits + split) * H
        dst = part_o_ptr + (part + heads[None, :]) * K_V_DIM
        if PV_CHUNKS == 1:
            tl.store(dst + dn[:, None], acc * norm[None, :])
        else:
            tl.store(dst + 0 + dc[:, None], acc0 * norm[None, :])
            tl.store(dst + 128 + dc[:, None], acc1 * norm[None, :])
            tl.store(dst + 256 + dc[:, None], acc2 * norm[None, :])
            tl.store(dst + 384 + dc[:, None], acc3 * norm[None, :])
        tl.store(part_lse_ptr + part + heads, lse)
        if FUSED_REDUCE:
            tl.debug_barrier()  # every thread's partial stores precede the release below
            done = tl.atomic_add(counter_ptr + seq, 1, sem="acq_rel", scope="gpu")
            if done == num_splits - 1:
                _merge_splits(part_o_ptr, part_lse_ptr, out_ptr, seq, num_splits, SPLITS_POW2, True)
                tl.atomic_xchg(counter_ptr + seq, 0, sem="relaxed", scope="gpu")  # ready for the next call


@triton.jit
def mla_merge_kernel(part_o_ptr, part_lse_ptr, out_ptr, num_splits, SPLITS_CHUNK: tl.constexpr,
                     PDL: tl.constexpr = False):
    """One program per (sequence, head): merge its splits (the unfused path), SPLITS_CHUNK partials per load.
    PDL: launched as a programmatic dependent of the split kernel, it waits here for that kernel's writes."""
    seq = tl.program_id(0)
    head = tl.program_id(1)
    if PDL:
        tl.extra.cuda.gdc_wait()
    H: tl.constexpr = K_HEADS
    dims = tl.arange(0, K_V_DIM)
    splits = tl.arange(0, SPLITS_CHUNK)
    top = tl.full((SPLITS_CHUNK,), float("-inf"), tl.float32)
    for first in range(0, num_splits, SPLITS_CHUNK):
        live = first + splits < num_splits
        rows = (seq * num_splits + first + splits) * H + head
        top = tl.maximum(top, tl.load(part_lse_ptr + rows, mask=live, other=float("-inf")))
    m = tl.max(top, 0)
    m = tl.where(m == float("-inf"), 0.0, m)
    total = tl.zeros((SPLITS_CHUNK,), tl.float32)
    o = tl.zeros((K_V_DIM,), tl.float32)
    for first in range(0, num_splits, SPLITS_CHUNK):
        live = first + splits < num_splits
        rows = (seq * num_splits + first + splits) * H + head
        w = tl.exp2(tl.load(part_lse_ptr + rows, mask=live, other=float("-inf")) - m)
        parts = tl.load(part_o_ptr + rows[:, None] * K_V_DIM + dims[None, :], mask=live[:, None], other=0.0)
        o += tl.sum(parts * w[:, None], 0)
        total += w
    o = o / tl.maximum(tl.sum(total, 0), 1e-30)
    tl.store(out_ptr + (seq * H + head) * K_V_DIM + dims, o.to(tl.bfloat16))


# ---------------------------------------------------------------------------------------------
# Hopper path in Gluon (explicit layouts and shared memory): both dots fp8 x fp8 wgmma, V^T built once per
# tile in shared memory by a register transpose of 8x8-byte blocks (8-byte shared loads and stores), KV
# tiles brought in by cp.async STAGES deep. GPU-only (sm90); selected by the `gluon` option.
# ---------------------------------------------------------------------------------------------
try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.ampere import async_copy as gl_async
    from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, warpgroup_mma,
                                                                  warpgroup_mma_wait)
    from triton.experimental.gluon.language.nvidia.hopper import mbarrier as gl_mbarrier, tma as gl_tma
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonTensorDescriptor
    # cp.async into shared memory: async_copy_global_to_shared in triton 3.6, renamed async_load later
    gl_async_load = getattr(gl_async, "async_load", None) or gl_async.async_copy_global_to_shared
    gl_barrier = getattr(gl, "thread_barrier", None) or gl.barrier  # CTA barrier (renamed after 3.6)
    gl_tma_load = getattr(gl_tma, "async_load", None) or gl_tma.async_copy_global_to_shared  # renamed after 3.6
    HAVE_GLUON = True
except Exception:  # older triton, or a platform without the Hopper set
    HAVE_GLUON = False

# Issue 31: the harness's flush leaves L2 full of dirty lines, and every line a tile brings in evicts one (a DRAM
# write-back under the kernel's reads: ~30 MB, 4.5 us of geomean, bench/notes/2026-12-01-issue31.md). A TMA copy
# with an L2 evict-first cache policy makes the KV's own lines the victims instead. Gluon (triton 3.6) gives its TMA
# copy no cache hint, so a kernel compiled with L2_EVICT_FIRST carries a marker comment, and a PTX stage added to
# Triton's compile pipeline (installed on the first such plan) rewrites that kernel's tensor copies to the
# `.L2::cache_hint` form with a `createpolicy ... evict_first` operand. Any other kernel's PTX passes unchanged.
L2_MARK = "mla201-l2-evict-first"
_TMA_COPY = re.compile(r"^(\s*)(@!?%p\d+ )?(cp\.async\.bulk\.tensor\.\dd\.shared::(?:cluster|cta)\.global"
                       r"\.mbarrier::complete_tx::bytes) (\[[^\]]*\], \[[^\]]*\], \[[^\]]*\]);$", re.M)


def l2_evict_first_ptx(ptx: str) -> str:
    """The marked kernel's TMA tile copies with an evict-first L2 policy (each in a PTX scope of its own)."""
    if L2_MARK not in ptx:
        return ptx
    return _TMA_COPY.sub(lambda m: (f"{m[1]}{{ .reg .b64 %l2ef; createpolicy.fractional.L2::evict_first.b64 %l2ef, "
                                    f"1.0; {m[2] or ''}{m[3]}.L2::cache_hint {m[4]}, %l2ef; }}"), ptx)


_PTX_HOOKED: list = []


def _install_l2_hint_stage() -> None:
    """Wrap the NVIDIA backend's PTX stage with l2_evict_first_ptx (once per process; an earlier hook still runs)."""
    if _PTX_HOOKED:
        return
    runtime = triton.knobs.runtime
    earlier = runtime.add_stages_inspection_hook

    def add_stage(*args):
        if not args:  # newer Triton asks the hook for its part of the cache key: (key, hash); the rewrite's own
            key, digest = earlier() if earlier is not None else ("", "")  # pattern is in it, so an edit recompiles
            mine = f"{L2_MARK}-{zlib.crc32(_TMA_COPY.pattern.encode()):08x}"
            return f"{key}+{mine}", f"{digest}+{mine}"
        if earlier is not None:
            earlier(*args)
        stages = next(a for a in args if isinstance(a, dict))
        if "ptx" in stages:
            make_ptx = stages["ptx"]
            stages["ptx"] = lambda src, metadata: l2_evict_first_ptx(make_ptx(src, metadata))

    runtime.add_stages_inspection_hook = add_stage
    _PTX_HOOKED.append(add_stage)


if HAVE_GLUON:
    @gluon.jit
    def _gl_issue_tile(kv_ptr, kn_buf, kr_buf, first, hi, BLOCK_N: gl.constexpr, NW: gl.constexpr = 4):
        """cp.async of one BLOCK_N-token tile (nope part and rope part) into one stage; rows >= hi zero-filled."""
        ld_n: gl.constexpr = gl.BlockedLayout([1, 16], [1, 32], [NW, 1], [1, 0])
        ld_r: gl.constexpr = gl.BlockedLayout([1, 16], [8, 4], [NW, 1], [1, 0])
        rn = first + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, ld_n))
        cn = gl.arange(0, 512, layout=gl.SliceLayout(0, ld_n))
        gl_async_load(kn_buf, kv_ptr + rn[:, None] * 576 + cn[None, :], mask=(rn < hi)[:, None])
        rr = first + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, ld_r))
        cr = gl.arange(0, 64, layout=gl.SliceLayout(0, ld_r))
        gl_async_load(kr_buf, kv_ptr + rr[:, None] * 576 + 512 + cr[None, :], mask=(rr < hi)[:, None])

    @gluon.jit
    def _gl_issue_tile_tma(desc_n, desc_r, kn_buf, kr_buf, ready, first, hi, BLOCK_N: gl.constexpr):
        """TMA copy of one tile (nope and rope boxes) signalling ready; nothing is asked for past hi. Rows past
        hi but inside the KV come in too (the scores mask them; _gl_zero_rows_past clears them before P.V)."""
        if first < hi:
            gl_mbarrier.expect(ready, BLOCK_N * 576)
            gl_tma_load(desc_n, [first, 0], ready, kn_buf)
            gl_tma_load(desc_r, [first, 512], ready, kr_buf)

    @gluon.jit
    def _gl_zero_rows_past(kn_buf, kr_buf, valid, BLOCK_N: gl.constexpr, NW: gl.constexpr):
        """Zero the rows >= valid of a tile in shared memory (a partial last tile copied by TMA)."""
        zl: gl.constexpr = gl.BlockedLayout([1, 16], [1, 32], [NW, 1], [1, 0])
        rows = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, zl))
        kn_buf.store(gl.where((rows < valid)[:, None], kn_buf.load(zl), 0.0).to(kn_buf.dtype))
        zr: gl.constexpr = gl.BlockedLayout([1, 16], [8, 4], [NW, 1], [1, 0])
        rows_r = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, zr))
        kr_buf.store(gl.where((rows_r < valid)[:, None], kr_buf.load(zr), 0.0).to(kr_buf.dtype))

    @gluon.jit
    def _gl_tile_arrived(ready, kn_buf, kr_buf, phase, valid, pred, BLOCK_N: gl.constexpr, NW: gl.constexpr):
        """Wait (if pred) for a TMA tile; a partial tile (valid rows < BLOCK_N) gets its other rows zeroed, since they
        belong to another sequence or split and P.V must not meet what they hold."""
        gl_mbarrier.wait(ready, phase, pred=pred)
        if pred and valid < BLOCK_N:
            _gl_zero_rows_past(kn_buf, kr_buf, valid, BLOCK_N, NW)
            fence_async_shared()
            gl_barrier()

    @gluon.jit
    def _gl_globaltimer():
        """The GPU's nanosecond clock (bench traces only)."""
        return gl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=gl.int64, is_pure=False, pack=1)

    @gluon.jit
    def _gl_globaltimer_after(x):
        """The clock read once the int32 x is in a register: the read is predicated on a comparison of x, so it cannot
        be issued before x arrives (bench traces only)."""
        return gl.inline_asm_elementwise("{ .reg .pred p; setp.ne.s32 p, $1, -2147483647; @p mov.u64 $0, %globaltimer; "
                                         "@!p mov.u64 $0, %globaltimer; }", "=l,r", [x], dtype=gl.int64, is_pure=False,
                                         pack=1)

    @gluon.jit
    def _gl_load_acquire(address):
        """This thread's load of an int32 with acquire semantics at GPU scope (a poll that orders the loads after it)."""
        return gl.inline_asm_elementwise("ld.acquire.gpu.global.b32 $0, [$1];", "=r,l",
                                         [address.to(gl.int64, bitcast=True)], dtype=gl.int32, is_pure=False, pack=1)

    @gluon.jit
    def _gl_wait_for_splits(counter_ptr, seq, num_splits, TRACE: gl.constexpr = False):
        """FUSED_MERGE: release this split's partial and wait until every split of the sequence has. The launch is
        cooperative (all programs resident), so the wait cannot hang. Returns the clock when the ticket came back and
        when the polls ended (TRACE; else zeros)."""
        gl_barrier()  # every warp's partial stores precede the release below
        # the counter only grows: a call's splits take the values [k * n, (k + 1) * n), so each split learns from its
        # own ticket when all n have arrived (int32: 2^31 / n calls); no reset, no second counter
        ticket = gl.atomic_add(counter_ptr + seq, 1, sem="release", scope="gpu")
        target = (ticket // num_splits + 1) * num_splits
        seen = ticket + 1
        if TRACE:
            t_ticket = _gl_globaltimer_after(ticket)
        while seen < target:
            seen = _gl_load_acquire(counter_ptr + seq)
        if TRACE:
            t_polled = _gl_globaltimer_after(seen)
        else:
            t_ticket = 0
            t_polled = 0
        return t_ticket, t_polled

    @gluon.jit
    def _gl_merge_own_slice(part_o_ptr, part_lse_ptr, out_ptr, counter_ptr, seq, split, num_splits,
                            ELEMS: gl.constexpr, NW: gl.constexpr, TRACE: gl.constexpr = False):
        """FUSED_MERGE: once every split of the sequence has stored its partial, this split merges ELEMS of the
        sequence's 16 x 512 outputs. Returns _gl_wait_for_splits's clocks."""
        t_ticket, t_polled = _gl_wait_for_splits(counter_ptr, seq, num_splits, TRACE)
        SP: gl.constexpr = 8192 // ELEMS  # the host launches this with a power-of-two split count, SP of them
        CH: gl.constexpr = 512 if ELEMS > 512 else ELEMS  # a chunk lies within one head
        NCH: gl.constexpr = ELEMS // CH
        # (chunk, split, dim): every split's partial of every chunk loaded at once, one L2 round trip in all
        ml: gl.constexpr = gl.BlockedLayout([1, 1, CH // (32 * NW)], [1, 1, 32], [1, 1, NW], [2, 1, 0])
        chunk_split: gl.constexpr = gl.SliceLayout(2, ml)
        chunk_dim: gl.constexpr = gl.SliceLayout(1, ml)
        first = split * ELEMS + gl.arange(0, NCH, layout=gl.SliceLayout(1, chunk_split)) * CH  # head * 512 + dim
        s = gl.arange(0, SP, layout=gl.SliceLayout(0, chunk_split))
        rows = (seq * num_splits + s[None, :]) * 16 + (first // 512)[:, None]  # (chunk, split)
        first_o = split * ELEMS + gl.arange(0, NCH, layout=gl.SliceLayout(1, chunk_dim)) * CH
        elems = first_o[:, None] + gl.arange(0, CH, layout=gl.SliceLayout(0, chunk_dim))[None, :]  # (chunk, dim)
        lse = gl.load(part_lse_ptr + rows, cache_modifier=".cg")
        parts = gl.load(part_o_ptr + rows[:, :, None] * 512 + (elems % 512)[:, None, :], cache_modifier=".cg")
        w = gl.exp2(lse - gl.max(lse, 1)[:, None])
        o = gl.sum(parts * w[:, :, None], 1) / gl.convert_layout(gl.sum(w, 1), gl.SliceLayout(1, chunk_dim))[:, None]
        gl.store(out_ptr + seq * 8192 + elems, o.to(gl.bfloat16))
        return t_ticket, t_polled

    @gluon.jit
    def _gl_normalizer(m_i, l_i, kv_scale, layout: gl.constexpr):
        """Per head, in SliceLayout(0, layout): the factor that normalizes O^T (P was scaled by 256, the KV by
        kv_scale) and the log2-sum-exp (-inf for a split with no tokens)."""
        l_h = gl.convert_layout(l_i, gl.SliceLayout(0, layout))
        m_h = gl.convert_layout(m_i, gl.SliceLayout(0, layout))
        safe_l = gl.where(l_h > 0, l_h, 1.0)
        return kv_scale / safe_l * (1.0 / 256.0), gl.where(l_h > 0, m_h + gl.log2(safe_l), float("-inf"))

    # DIRECT_PARTIALS (issue 31): a split stores its partial straight from the P.V wgmma's accumulator, with no
    # layout conversion through shared memory, in an order of its own that _gl_merge_direct_slice reads back.
    @gluon.jit
    def _gl_partial_word_index(rows, cols, hi):
        """Word of O^T (row r in V^T row order, head) in a split's 8,192-word partial. Blocks of 64 words hold
        8 rows x 8 heads, so that a warp's store is 256 contiguous bytes. Block b = (head // 8, hi, r >> 4 & 3,
        r >> 6, r >> 3 & 1): a merge slice of 2 or more splits needs one head octet's log-sum-exps, and blocks
        8g .. 8g + 7 hold 8 consecutive value dims (b % 8 = value dim % 8) for the merge's output stores."""
        outer = (((cols // 8) * 2 + hi) * 4 + (rows[:, None] // 16) % 4) * 8 + (rows[:, None] // 64) * 2
        return ((outer + (rows[:, None] // 8) % 2) * 8 + rows[:, None] % 8) * 8 + cols % 8

    @gluon.jit
    def _gl_store_direct(part_o_ptr, part_lse_ptr, acc_lo, acc_hi, m_i, l_i, kv_scale, row0,
                         o_layout: gl.constexpr):
        """A split's normalized partial (in _gl_partial_word_index's order) and its log2-sum-exp per head."""
        rows = gl.arange(0, 256, layout=gl.SliceLayout(1, o_layout))
        heads = gl.arange(0, 16, layout=gl.SliceLayout(0, o_layout))
        norm, lse = _gl_normalizer(m_i, l_i, kv_scale, o_layout)
        words = part_o_ptr + row0 * 512
        for hi in gl.static_range(2):
            o = (acc_hi if hi else acc_lo) * norm[None, :]
            gl.store(words + _gl_partial_word_index(rows, heads[None, :], hi), o.to(part_o_ptr.dtype.element_ty))
        gl.store(part_lse_ptr + row0 + heads, lse)

    # CLUSTER_MERGE (issue 31): the splits of a sequence form one thread-block cluster. The host launches the kernel
    # with cluster dims = splits and an area of shared memory past Triton's own, at xchg_offset bytes from global_smem
    # (offsets below). Each split stages its bf16 partial words (in _gl_partial_word_index's order) and its 16
    # log2-sum-exps in its own area, then bulk-copies (cp.async.bulk, shared::cta -> shared::cluster) words [t x ELEMS,
    # + ELEMS) and the log2-sum-exps to split t, completing on split t's mbarrier; each split waits on its own mbarrier
    # and merges from what it received; a last cluster barrier keeps every area alive until all copies have landed.
    @gluon.jit
    def _gl_cluster_barrier(ASM: gl.constexpr):
        """barrier.cluster.arrive / wait (every thread of the program)."""
        gl.inline_asm_elementwise(ASM + " // $0", "=r", [], dtype=gl.int32, is_pure=False, pack=1)

    @gluon.jit
    def _gl_shared_store_b16(offset, bits):
        """Store the int16 bits at byte `offset` of this program's shared memory (past Triton's own)."""
        gl.inline_asm_elementwise("{ .reg .u32 la; mov.u32 la, global_smem; add.u32 la, la, $1; "
                                  "st.shared.b16 [la], $2; } // $0", "=r,r,h", [offset, bits], dtype=gl.int32,
                                  is_pure=False, pack=1)

    @gluon.jit
    def _gl_shared_store_b32(offset, bits):
        """Store the int32 bits at byte `offset` of this program's shared memory (past Triton's own)."""
        gl.inline_asm_elementwise("{ .reg .u32 la; mov.u32 la, global_smem; add.u32 la, la, $1; "
                                  "st.shared.b32 [la], $2; } // $0", "=r,r,r", [offset, bits], dtype=gl.int32,
                                  is_pure=False, pack=1)

    @gluon.jit
    def _gl_shared_b16(offset):
        """This program's int16 at byte `offset` of shared memory (past Triton's own: the exchange area)."""
        return gl.inline_asm_elementwise("{ .reg .u32 la; mov.u32 la, global_smem; add.u32 la, la, $1; "
                                         "ld.shared.b16 $0, [la]; }", "=h,r", [offset], dtype=gl.int16,
                                         is_pure=False, pack=1)

    @gluon.jit
    def _gl_shared_b32(offset):
        """This program's int32 at byte `offset` of shared memory (past Triton's own: the exchange area)."""
        return gl.inline_asm_elementwise("{ .reg .u32 la; mov.u32 la, global_smem; add.u32 la, la, $1; "
                                         "ld.shared.b32 $0, [la]; }", "=r,r", [offset], dtype=gl.int32,
                                         is_pure=False, pack=1)

    @gluon.jit
    def _gl_exchange_init(mbar_offset, expected_bytes):
        """Thread 0 sets up this program's exchange mbarrier: one arrival (its own, now) and expected_bytes of copies
        to come; the fence makes the set-up visible to the cluster's copies once the cluster barrier has passed."""
        gl.inline_asm_elementwise("{ .reg .pred p; .reg .u32 t, mb; mov.u32 t, %tid.x; setp.eq.u32 p, t, 0; "
                                  "mov.u32 mb, global_smem; add.u32 mb, mb, $1; "
                                  "@p mbarrier.init.shared::cta.b64 [mb], 1; "
                                  "@p mbarrier.arrive.expect_tx.shared::cta.b64 _, [mb], $2; "
                                  "@p fence.mbarrier_init.release.cluster; } // $0", "=r,r,r",
                                  [mbar_offset, expected_bytes], dtype=gl.int32, is_pure=False, pack=1)

    @gluon.jit
    def _gl_exchange_send(xchg_offset, split, SP: gl.constexpr, ELEMS: gl.constexpr):
        """Threads 0 .. SP - 1: thread t bulk-copies this split's staged words [t x ELEMS, + ELEMS) to split t's
        exchange area at (this split, 0) and its staged log2-sum-exps at (this split, head), both completing on split
        t's mbarrier."""
        chunk: gl.constexpr = ELEMS * 2
        gl.inline_asm_elementwise(
            "{ .reg .pred p; .reg .u32 t, base, src, dst, mb, rdst, rmb; "
            "mov.u32 t, %tid.x; setp.lt.u32 p, t, $6; mov.u32 base, global_smem; "
            "mad.lo.u32 src, t, $7, base; add.u32 src, src, $1; add.u32 dst, base, $2; add.u32 mb, base, $3; "
            "@p mapa.shared::cluster.u32 rdst, dst, t; @p mapa.shared::cluster.u32 rmb, mb, t; "
            "@p cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [rdst], [src], $7, [rmb]; "
            "add.u32 src, base, $4; add.u32 dst, base, $5; @p mapa.shared::cluster.u32 rdst, dst, t; "
            "@p cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [rdst], [src], 64, [rmb]; "
            "} // $0", "=r,r,r,r,r,r,r,r",
            [xchg_offset + X_STAGE, xchg_offset + split * chunk, xchg_offset + X_MBAR, xchg_offset + X_STAGE_LSE,
             xchg_offset + X_RECV_LSE + split * 64, split * 0 + SP, split * 0 + chunk],
            dtype=gl.int32, is_pure=False, pack=1)

    @gluon.jit
    def _gl_exchange_wait(mbar_offset):
        """Wait until every copy this program's exchange mbarrier expects has landed (acquire, cluster scope)."""
        gl.inline_asm_elementwise("{ .reg .pred done; .reg .u32 mb; mov.u32 mb, global_smem; add.u32 mb, mb, $1; "
                                  "waitLoop: mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [mb], 0; "
                                  "@!done bra waitLoop; } // $0", "=r,r", [mbar_offset], dtype=gl.int32,
                                  is_pure=False, pack=1)

    @gluon.jit
    def _gl_push_partial(acc_lo, acc_hi, m_i, l_i, kv_scale, split, xchg_offset, ELEMS: gl.constexpr,
                         NW: gl.constexpr, o_layout: gl.constexpr):
        """Stage this split's normalized bf16 partial (word w at w, _gl_partial_word_index) and its log2-sum-exps,
        then send each split its slice of the words and all the log2-sum-exps (_gl_exchange_send)."""
        rows = gl.arange(0, 256, layout=gl.SliceLayout(1, o_layout))
        heads = gl.arange(0, 16, layout=gl.SliceLayout(0, o_layout))
        norm, lse = _gl_normalizer(m_i, l_i, kv_scale, o_layout)
        for hi in gl.static_range(2):
            o = ((acc_hi if hi else acc_lo) * norm[None, :]).to(gl.bfloat16).to(gl.int16, bitcast=True)
            _gl_shared_store_b16(xchg_offset + X_STAGE + _gl_partial_word_index(rows, heads[None, :], hi) * 2, o)
        _gl_shared_store_b32(xchg_offset + X_STAGE_LSE + heads * 4, lse.to(gl.int32, bitcast=True))
        fence_async_shared()  # the staged words are the bulk copies' source (the async proxy)
        gl_barrier()
        _gl_exchange_send(xchg_offset, split, 8192 // ELEMS, ELEMS)

    @gluon.jit
    def _gl_merge_direct_slice(part_o_ptr, part_lse_ptr, out_ptr, seq, split, num_splits, ELEMS: gl.constexpr,
                               NW: gl.constexpr, CLUSTER: gl.constexpr = False, xchg_offset=0):
        """Merge the sequence's words [split x ELEMS, + ELEMS) of every split's partial (one head octet: ELEMS <=
        4,096), read as (split, row of 8 words, head % 8): from global memory once _gl_wait_for_splits has returned,
        or (CLUSTER) from this program's exchange area once the cluster barrier has."""
        SP: gl.constexpr = 8192 // ELEMS
        V: gl.constexpr = 8 if ELEMS >= 1024 else ELEMS // 128  # consecutive words per thread
        RPT: gl.constexpr = ELEMS // 1024 if ELEMS >= 1024 else 1
        l3: gl.constexpr = gl.BlockedLayout([SP, RPT, V], [1, 32 // (8 // V), 8 // V], [1, NW, 1], [2, 1, 0])
        lc: gl.constexpr = gl.BlockedLayout([1, 1], [4, 8], [NW, 1], [1, 0])  # (split, head % 8), compact
        s3 = gl.arange(0, SP, layout=gl.SliceLayout(1, gl.SliceLayout(2, l3)))
        r3 = gl.arange(0, ELEMS // 8, layout=gl.SliceLayout(0, gl.SliceLayout(2, l3)))
        c3 = gl.arange(0, 8, layout=gl.SliceLayout(0, gl.SliceLayout(1, l3)))
        s2 = gl.arange(0, SP, layout=gl.SliceLayout(1, lc))
        c2 = gl.arange(0, 8, layout=gl.SliceLayout(0, lc))
        j = (split * ELEMS) // 4096  # the slice's head octet
        if CLUSTER:  # the exchange area: (sender split, word) bf16, then (sender split, head) fp32
            words = _gl_shared_b16(xchg_offset + (s3[:, None, None] * ELEMS + (r3 * 8)[None, :, None]
                                                  + c3[None, None, :]) * 2).to(gl.bfloat16, bitcast=True)
            words = words.to(gl.float32)
            lse_at = xchg_offset + X_RECV_LSE + (s2[:, None] * 16 + j * 8 + c2[None, :]) * 4
            lse = _gl_shared_b32(lse_at).to(gl.float32, bitcast=True)
        else:
            lse = gl.load(part_lse_ptr + (seq * num_splits + s2)[:, None] * 16 + j * 8 + c2[None, :],
                          cache_modifier=".cg")
            at = (((seq * num_splits + s3)[:, None] * 8192 + split * ELEMS + r3[None, :] * 8)[:, :, None]
                  + c3[None, None, :])
            words = gl.load(part_o_ptr + at, cache_modifier=".cg").to(gl.float32)
        w = gl.exp2(lse - gl.max(lse, 0)[None, :])
        total = gl.convert_layout(gl.sum(w, 0), gl.SliceLayout(0, gl.SliceLayout(0, l3)))
        w = gl.convert_layout(w, gl.SliceLayout(1, l3))
        o = gl.sum(words * gl.expand_dims(w, 1), 0) / total[None, :]  # (row of 8 words, head % 8)
        # block b of _gl_partial_word_index and row % 8 (= r & 7) -> value dim (b // 32 % 2) * 256 + (b // 8 % 4) * 64
        # + (r & 7) * 8 + b % 8
        if ELEMS >= 512:  # 8 consecutive dims of a head per thread: a 16-byte store
            g8 = gl.permute(gl.reshape(o, [ELEMS // 512, 8, 8, 8]), (0, 2, 3, 1))  # (b // 8, r & 7, head % 8, b % 8)
            ol: gl.constexpr = gl.BlockedLayout([1, 8], [32, 1], [NW, 1], [1, 0])
            o8 = gl.convert_layout(gl.reshape(g8, [ELEMS // 8, 8]), ol)
            ro = gl.arange(0, ELEMS // 8, layout=gl.SliceLayout(1, ol))  # (b // 8, r & 7, head % 8)
            b8 = (split * ELEMS) // 512 + ro // 64
            first = (j * 8 + ro % 8) * 512 + (b8 // 4) % 2 * 256 + (b8 % 4) * 64 + (ro // 8) % 8 * 8
            d8 = gl.arange(0, 8, layout=gl.SliceLayout(0, ol))
            gl.store(out_ptr + seq * 8192 + first[:, None] + d8[None, :], o8.to(gl.bfloat16))
        else:
            ro = gl.arange(0, ELEMS // 8, layout=gl.SliceLayout(1, gl.SliceLayout(0, l3)))
            co = gl.arange(0, 8, layout=gl.SliceLayout(0, gl.SliceLayout(0, l3)))
            b = (split * ELEMS) // 64 + ro // 8
            dim = (b // 32) % 2 * 256 + (b // 8) % 4 * 64 + (ro % 8) * 8 + b % 8
            gl.store(out_ptr + seq * 8192 + (j * 8 + co)[None, :] * 512 + dim[:, None], o.to(gl.bfloat16))

    @gluon.jit
    def _gl_vt_block(v):
        """(64 tokens, 128 dims) -> (128 dims, 64 tokens) in the row and column orders of the V^T buffer."""
        v5 = gl.reshape(v, [8, 8, 4, 4, 8])  # (i, r, d // 32, (d // 8) % 4, d % 8)
        return gl.reshape(gl.permute(v5, (2, 4, 3, 1, 0)), [128, 64])

    @gluon.jit
    def _gl_dim_order(o):
        """(256 rows of O^T in V^T row order, 16) -> (256 value dims in order, 16).

        Row 32b + 4m + c of O^T is value dim 32b + 8c + m."""
        return gl.reshape(gl.permute(gl.reshape(o, [8, 8, 4, 16]), (0, 2, 1, 3)), [256, 16])

    # VT_ROWS = 0: V^T as the register (A) operand of the P.V wgmma, never written to shared memory. Both orders of
    # that operand are free: row r is value dim d(r), column k is token t(k), chosen so that a thread's rows are
    # consecutive dims (one 8-byte shared load per token with 4 warps, 4 bytes with 8) and the 4 tokens a wavefront
    # reads sit on distinct 128-byte swizzle phases (no bank conflicts). 4 warps (64-token tiles): a thread holds rows
    # r3, r6, r7 x tokens k0, k1, k4, k5, and d(r) = r3 + 2 r6 + 4 r7 + 8 (r & 7) + 64 ((r >> 4) & 3). 8 warps (two
    # warpgroups, 128-token tiles): rows r3, r7 x tokens k0, k1, k4-k6, and d(r) = r3 + 2 r7 + 4 (r & 7) +
    # 32 ((r >> 4) & 7). Either way t(k) = k0 + 2 k2 + 4 k3 + 8 k1 + 16 k4 + 32 k5 (+ 64 k6).
    @gluon.jit
    def _gl_v_operand(kn_half, a_layout: gl.constexpr, NW: gl.constexpr = 4):
        """(BLOCK_N tokens, 256 dims) of the tile in shared memory -> the A operand (256 rows, BLOCK_N tokens)."""
        if NW == 4:
            ld_v: gl.constexpr = gl.DistributedLinearLayout(
                reg_bases=[[0, 1], [0, 2], [0, 4], [1, 0], [8, 0], [16, 0], [32, 0]],
                lane_bases=[[2, 0], [4, 0], [0, 8], [0, 16], [0, 32]],
                warp_bases=[[0, 64], [0, 128]], block_bases=[], shape=[64, 256])
            # token bits (t5 t4 | t3 | t2 t1 | t0), dim bits (d7 d6 | d5 d4 d3 | d2 d1 | d0) -> rows (d2 d1 | d7 d6 |
            # d0 | d5 d4 d3), columns (t5 t4 | t2 t1 | t3 | t0): a relabelling within each thread's registers
            v8 = gl.reshape(kn_half.load(ld_v), [4, 2, 4, 2, 4, 8, 4, 2])
            vt = gl.reshape(gl.permute(v8, (6, 4, 7, 5, 0, 2, 1, 3)), [256, 64])
        else:
            ld_v: gl.constexpr = gl.DistributedLinearLayout(
                reg_bases=[[0, 1], [0, 2], [1, 0], [8, 0], [16, 0], [32, 0], [64, 0]],
                lane_bases=[[2, 0], [4, 0], [0, 4], [0, 8], [0, 16]],
                warp_bases=[[0, 32], [0, 64], [0, 128]], block_bases=[], shape=[128, 256])
            # token bits (t6 t5 t4 | t3 | t2 t1 | t0), dim bits (d7 d6 d5 | d4 d3 d2 | d1 | d0) -> rows (d1 | d7 d6 d5 |
            # d0 | d4 d3 d2), columns (t6 t5 t4 | t2 t1 | t3 | t0)
            v8 = gl.reshape(kn_half.load(ld_v), [8, 2, 4, 2, 8, 8, 2, 2])
            vt = gl.reshape(gl.permute(v8, (6, 4, 7, 5, 0, 2, 1, 3)), [256, 128])
        return gl.convert_layout(vt, a_layout, assert_trivial=True)

    @gluon.jit
    def _gl_p_operand_order(p8, BLOCK_N: gl.constexpr):
        """(BLOCK_N tokens, 16 heads) -> (16, BLOCK_N) P^T with column k holding token t(k), as _gl_v_operand orders."""
        p5 = gl.reshape(p8, [BLOCK_N // 16, 2, 4, 2, 16])  # (t6 t5 t4 or t5 t4, t3, t2 t1, t0, head)
        return gl.reshape(gl.permute(p5, (4, 0, 2, 1, 3)), [16, BLOCK_N])

    @gluon.jit
    def mla_fp8_gluon_kernel(
        q_ptr, q_stride_t, q_stride_h,
        kv_ptr, kv_scale_ptr, kv_indptr_ptr,
        out_ptr, part_o_ptr, part_lse_ptr, counter_ptr,
        sm_scale, num_splits, trace_ptr, kv_desc_n, kv_desc_r, xchg_offset,
        WRITE_FINAL: gl.constexpr,
        BLOCK_N: gl.constexpr,     # tokens per tile = the M of the score wgmma (64: one warpgroup, 128: two)
        STAGES: gl.constexpr,      # cp.async depth
        VT_ROWS: gl.constexpr,     # 512: all V^T at once; 256: two halves through one buffer; 0: V^T in registers
        ASYNC: gl.constexpr = False,  # the score wgmma in flight while the low half of V^T is transposed
        PDL_TRIGGER: gl.constexpr = False,  # let the merge kernel (launched with PDL) start its programs now
        LATE_REFILL: gl.constexpr = False,  # refill a stage once its tile is consumed: STAGES tiles ahead, not - 1
        VEC_EPILOGUE: gl.constexpr = False,  # output / partials stored as 8 consecutive dims per thread (16 B bf16)
        LAZY_SUM: gl.constexpr = False,  # softmax denominators kept per token row, summed across warps once at the end
        NW: gl.constexpr = 4,  # warps = BLOCK_N // 16: 8 (two warpgroups on 128-token tiles) needs VT_ROWS 0
        TRACE: gl.constexpr = False,  # bench only: per program 16 int64: globaltimer at start, first tile in, end,
        # the SM id, then kv_indptr in, Q in shared memory, loop done, merge ticket back, merge polls done (trace_201.py)
        FUSED_MERGE: gl.constexpr = False,  # cooperative launch: the splits of a sequence merge it themselves
        MERGE_ELEMS: gl.constexpr = 512,  # FUSED_MERGE: output elements (head x dim) each split merges
        TMA: gl.constexpr = False,  # tiles copied by TMA (kv_desc_n / kv_desc_r) and awaited on mbarriers
        L2_EVICT_FIRST: gl.constexpr = False,  # TMA: the marker that has l2_evict_first_ptx hint the tile copies
        DIRECT_PARTIALS: gl.constexpr = False,  # FUSED_MERGE: partials stored from the accumulator as it lies
        CLUSTER_MERGE: gl.constexpr = False,  # DIRECT_PARTIALS through distributed shared memory (a cluster per sequence)
    ):
        split = gl.program_id(0)
        seq = gl.program_id(1)
        H: gl.constexpr = 16
        if L2_EVICT_FIRST:
            gl.inline_asm_elementwise("// mla201-l2-evict-first (L2_MARK)\n\tmov.u32 $0, 0;", "=r", [],
                                      dtype=gl.int32, is_pure=False, pack=1)
        if PDL_TRIGGER:
            gl.inline_asm_elementwise("griddepcontrol.launch_dependents; // $0", "=r", [], dtype=gl.int32,
                                      is_pure=False, pack=1)
        gl.static_assert(NW * 16 == BLOCK_N, "BLOCK_N must be 16 x NW")
        if TRACE:
            t_start = _gl_globaltimer()
        t_first = t_start if TRACE else 0
        gl.static_assert(NW == 4 or VT_ROWS == 0, "8 warps need VT_ROWS 0")
        if CLUSTER_MERGE:  # every program has set up its exchange mbarrier before any copy reaches it
            _gl_exchange_init(xchg_offset + X_MBAR, xchg_offset * 0 + (X_RECV_LSE + (8192 // MERGE_ELEMS) * 64))
            _gl_cluster_barrier("barrier.cluster.arrive.relaxed.aligned;")
        kv_start = gl.load(kv_indptr_ptr + seq)
        kv_end = gl.load(kv_indptr_ptr + seq + 1)
        per_split = gl.cdiv(gl.cdiv(kv_end - kv_start, num_splits), BLOCK_N) * BLOCK_N
        lo = kv_start + split * per_split
        hi = gl.minimum(lo + per_split, kv_end)
        n_tiles = gl.cdiv(gl.maximum(hi - lo, 0), BLOCK_N)
        if TRACE:
            t_kv = _gl_globaltimer_after(hi)

        fp8: gl.constexpr = gl.float8e4nv
        sw128: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
        sw64: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=8, rank=2)
        kn_bufs = gl.allocate_shared_memory(fp8, [STAGES, BLOCK_N, 512], sw128)
        kr_bufs = gl.allocate_shared_memory(fp8, [STAGES, BLOCK_N, 64], sw64)
        if VT_ROWS > 0:
            vt_buf = gl.allocate_shared_memory(fp8, [VT_ROWS, BLOCK_N], sw64)
        p_buf = gl.allocate_shared_memory(fp8, [H, BLOCK_N], sw64 if BLOCK_N == 64 else sw128)
        qn_buf = gl.allocate_shared_memory(fp8, [H, 512], sw128)
        qr_buf = gl.allocate_shared_memory(fp8, [H, 64], sw64)

        # the first STAGES - 1 (LATE_REFILL: STAGES) tiles in flight before Q is prepared
        if TMA:
            gl.static_assert(not LATE_REFILL, "TMA refills at the top of the loop")
            ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], gl_mbarrier.MBarrierLayout())
            for j in gl.static_range(STAGES):
                gl_mbarrier.init(ready.index(j), count=1)
            gl_barrier()
            for j in gl.static_range(STAGES - 1):
                _gl_issue_tile_tma(kv_desc_n, kv_desc_r, kn_bufs.index(j), kr_bufs.index(j), ready.index(j),
                                   lo + j * BLOCK_N, hi, BLOCK_N)
        else:
            for j in gl.static_range(STAGES if LATE_REFILL else STAGES - 1):
                _gl_issue_tile(kv_ptr, kn_bufs.index(j), kr_bufs.index(j), lo + j * BLOCK_N, hi, BLOCK_N, NW)
                gl_async.commit_group()

        # Q: per-head e4m3 with one scale per head, into shared memory as the B operand of the score wgmma
        ql: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [NW, 1], [1, 0])
        qh = gl.arange(0, H, layout=gl.SliceLayout(1, ql))
        qd = gl.arange(0, 512, layout=gl.SliceLayout(0, ql))
        qdr = gl.arange(0, 64, layout=gl.SliceLayout(0, ql))
        q_row = q_ptr + seq * q_stride_t + qh[:, None] * q_stride_h
        qn = gl.load(q_row + qd[None, :]).to(gl.float32)
        qr = gl.load(q_row + 512 + qdr[None, :]).to(gl.float32)
        amax = gl.maximum(gl.max(gl.abs(qn), 1), gl.max(gl.abs(qr), 1))
        q_scale = gl.maximum(amax, 1e-12) / 448.0
        qn_buf.store((qn / q_scale[:, None]).to(fp8))
        qr_buf.store((qr / q_scale[:, None]).to(fp8))

        s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NW, 1],
                                                           instr_shape=[16, H, 32])
        o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NW, 1],
                                                           instr_shape=[16, H, 32])
        kv_scale = gl.load(kv_scale_ptr)
        log2e: gl.constexpr = 1.4426950408889634
        score_scale = gl.convert_layout(q_scale * (sm_scale * log2e * kv_scale), gl.SliceLayout(0, s_layout))

        m_i = gl.full([H], float("-inf"), gl.float32, layout=gl.SliceLayout(0, s_layout))
        l_i = gl.full([H], 0.0, gl.float32, layout=gl.SliceLayout(0, s_layout))
        l_rows = gl.zeros([BLOCK_N, H], gl.float32, layout=s_layout)  # LAZY_SUM: a cross-warp sum less per tile
        acc_lo = gl.zeros([256, H], gl.float32, layout=o_layout)  # O^T, dims 0..255
        acc_hi = gl.zeros([256, H], gl.float32, layout=o_layout)  # O^T, dims 256..511
        s_zero = gl.zeros([BLOCK_N, H], gl.float32, layout=s_layout)
        a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=4)  # VT_ROWS 0
        tok = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, s_layout))
        # V^T, conflict-free: a thread loads 8 tokens (t = 8i + r, i its register) x 8 dims with 8-byte shared
        # loads; a half-warp reads 8 rows of distinct swizzle phase. The register transpose (PRMT) gives 8 dims
        # x 8 tokens, stored as 8-byte rows of V^T whose columns are the tokens in the order r * 8 + i (P^T is
        # stored in the same order) and whose rows are the dims of each 128-dim chunk in the order
        # (d // 32) * 32 + (d % 8) * 4 + (d % 32) // 8 (undone when the output is written), so that a half-warp
        # stores two whole 64-byte rows.
        tl_v: gl.constexpr = gl.DistributedLinearLayout(
            reg_bases=[[0, 1], [0, 2], [0, 4], [8, 0], [16, 0], [32, 0]],
            lane_bases=[[0, 8], [1, 0], [2, 0], [4, 0], [0, 16]],
            warp_bases=[[0, 32], [0, 64]], block_bases=[], shape=[64, 128])
        fence_async_shared()
        gl_barrier()
        if TRACE:
            t_q = _gl_globaltimer()

        for i in range(n_tiles):
            stage = i % STAGES
            if TMA:
                gl_barrier()  # every warp is done with the stage about to be refilled (read in iteration i - 1)
                nxt = i + STAGES - 1
                _gl_issue_tile_tma(kv_desc_n, kv_desc_r, kn_bufs.index(nxt % STAGES), kr_bufs.index(nxt % STAGES),
                                   ready.index(nxt % STAGES), lo + nxt * BLOCK_N, hi, BLOCK_N)
                _gl_tile_arrived(ready.index(stage), kn_bufs.index(stage), kr_bufs.index(stage), (i // STAGES) & 1,
                                 hi - (lo + i * BLOCK_N), True, BLOCK_N, NW)
            elif not LATE_REFILL:
                # every warp is done with the stage about to be refilled (read in iteration i - 1)
                gl_barrier()
                nxt = i + STAGES - 1
                _gl_issue_tile(kv_ptr, kn_bufs.index(nxt % STAGES), kr_bufs.index(nxt % STAGES),
                               lo + nxt * BLOCK_N, hi, BLOCK_N, NW)
                gl_async.commit_group()
            if not TMA:
                gl_async.wait_group(STAGES - 1)
                fence_async_shared()
                gl_barrier()
            if TRACE:
                t_first = gl.where(i == 0, _gl_globaltimer(), t_first)
            kn = kn_bufs.index(stage)
            kr = kr_bufs.index(stage)

            if ASYNC and VT_ROWS == 0:
                # the score wgmma runs while this warpgroup loads the low half of V into registers
                s_tok = warpgroup_mma(kn, qn_buf.permute((1, 0)), s_zero, use_acc=False, is_async=True)
                s_tok = warpgroup_mma(kr, qr_buf.permute((1, 0)), s_tok, is_async=True)
                v_lo = _gl_v_operand(kn.slice(0, 256, dim=1), a_layout, NW)
                s = warpgroup_mma_wait(0, deps=[s_tok])
            elif ASYNC:
                # the score wgmma runs while this warpgroup transposes the low half of V (independent work)
                s_tok = warpgroup_mma(kn, qn_buf.permute((1, 0)), s_zero, use_acc=False, is_async=True)
                s_tok = warpgroup_mma(kr, qr_buf.permute((1, 0)), s_tok, is_async=True)
                for part in gl.static_range(2):
                    v = kn.slice(part * 128, 128, dim=1).load(tl_v)  # (64, 128) tokens x dims
                    vt_buf.slice(part * 128, 128, dim=0).store(_gl_vt_block(v))
                s = warpgroup_mma_wait(0, deps=[s_tok])
            else:
                s = warpgroup_mma(kn, qn_buf.permute((1, 0)), s_zero, use_acc=False)
                s = warpgroup_mma(kr, qr_buf.permute((1, 0)), s)
            rows = lo + i * BLOCK_N + tok
            s = gl.where((rows < hi)[:, None], s * score_scale[None, :], float("-inf"))
            m_new = gl.maximum(m_i, gl.max(s, 0))
            alpha = gl.exp2(m_i - m_new)
            p = gl.exp2(s - m_new[None, :])
            if LAZY_SUM:
                l_rows = l_rows * alpha[None, :] + p
            else:
                l_i = l_i * alpha + gl.sum(p, 0)
            m_i = m_new
            if VT_ROWS == 0:
                p_buf.store(_gl_p_operand_order((p * 256.0).to(fp8), BLOCK_N))
            else:
                p8 = gl.reshape((p * 256.0).to(fp8), [8, 8, H])  # token 8i + r -> column 8r + i
                p_buf.store(gl.reshape(gl.permute(p8, (2, 1, 0)), [H, BLOCK_N]))
            alpha_o = gl.convert_layout(alpha, gl.SliceLayout(0, o_layout))
            acc_lo = acc_lo * alpha_o[None, :]
            acc_hi = acc_hi * alpha_o[None, :]
            p_t = p_buf.permute((1, 0))  # (BLOCK_N, 16), tokens contiguous: K-major for fp8
            if VT_ROWS == 0:
                if not ASYNC:
                    v_lo = _gl_v_operand(kn.slice(0, 256, dim=1), a_layout, NW)
                fence_async_shared()
                gl_barrier()  # P^T is in shared memory for every warp before the wgmma reads it
                if ASYNC:  # the high half of V comes into registers under the low half's P.V
                    lo_tok = warpgroup_mma(v_lo, p_t, acc_lo, is_async=True)
                    v_hi = _gl_v_operand(kn.slice(256, 256, dim=1), a_layout, NW)
                    acc_lo = warpgroup_mma_wait(0, deps=[lo_tok])
                    acc_hi = warpgroup_mma(v_hi, p_t, acc_hi)
                else:
                    acc_lo = warpgroup_mma(v_lo, p_t, acc_lo)
                    acc_hi = warpgroup_mma(_gl_v_operand(kn.slice(256, 256, dim=1), a_layout, NW), p_t, acc_hi)
            elif VT_ROWS == 512:
                for part in gl.static_range(4):
                    v = kn.slice(part * 128, 128, dim=1).load(tl_v)  # (64, 128) tokens x dims
                    vt_buf.slice(part * 128, 128, dim=0).store(_gl_vt_block(v))
                fence_async_shared()
                gl_barrier()
                acc_lo = warpgroup_mma(vt_buf.slice(0, 256, dim=0), p_t, acc_lo)
                acc_hi = warpgroup_mma(vt_buf.slice(256, 256, dim=0), p_t, acc_hi)
            else:
                if not ASYNC:  # (the async paths transposed the low half under the score wgmma)
                    for part in gl.static_range(2):
                        v = kn.slice(part * 128, 128, dim=1).load(tl_v)  # (64, 128) tokens x dims
                        vt_buf.slice(part * 128, 128, dim=0).store(_gl_vt_block(v))
                fence_async_shared()
                gl_barrier()
                acc_lo = warpgroup_mma(vt_buf, p_t, acc_lo)
                gl_barrier()  # the first half is consumed before the buffer is refilled
                for part in gl.static_range(2):
                    v = kn.slice(256 + part * 128, 128, dim=1).load(tl_v)  # (64, 128) tokens x dims
                    vt_buf.slice(part * 128, 128, dim=0).store(_gl_vt_block(v))
                fence_async_shared()
                gl_barrier()
                if LATE_REFILL:  # every warp has read this stage for the last time (scores, both V^T halves)
                    _gl_issue_tile(kv_ptr, kn, kr, lo + (i + STAGES) * BLOCK_N, hi, BLOCK_N, NW)
                    gl_async.commit_group()
                acc_hi = warpgroup_mma(vt_buf, p_t, acc_hi)

        if TRACE:
            t_loop = _gl_globaltimer()
        if not TMA:
            gl_async.wait_group(0)
        if LAZY_SUM:
            l_i = gl.sum(l_rows, 0)
        if CLUSTER_MERGE:
            gl.static_assert(DIRECT_PARTIALS and NW == 4, "the cluster merge takes the direct partials' word order")
            _gl_cluster_barrier("barrier.cluster.wait.aligned;")
            _gl_push_partial(acc_lo, acc_hi, m_i, l_i, kv_scale, split, xchg_offset, MERGE_ELEMS, NW, o_layout)
            _gl_exchange_wait(xchg_offset + X_MBAR)
            _gl_cluster_barrier("barrier.cluster.arrive.release.aligned;")  # all of this split's copies have landed
            if TRACE:
                t_ticket = _gl_globaltimer()
                t_polled = t_ticket
            _gl_merge_direct_slice(part_o_ptr, part_lse_ptr, out_ptr, seq, split, num_splits, MERGE_ELEMS, NW,
                                   True, xchg_offset)
            _gl_cluster_barrier("barrier.cluster.wait.acquire.aligned;")  # no area is left while a copy may read it
        elif DIRECT_PARTIALS:
            gl.static_assert(FUSED_MERGE and VT_ROWS == 0 and NW == 4, "direct partials: the fused merge, V^T in registers")
            _gl_store_direct(part_o_ptr, part_lse_ptr, acc_lo, acc_hi, m_i, l_i, kv_scale, (seq * num_splits + split) * H,
                             o_layout)
            t_ticket, t_polled = _gl_wait_for_splits(counter_ptr, seq, num_splits, TRACE)
            _gl_merge_direct_slice(part_o_ptr, part_lse_ptr, out_ptr, seq, split, num_splits, MERGE_ELEMS, NW)
        else:  # epilogue: O^T chunks to a dims-contiguous layout, normalized
            if VEC_EPILOGUE:  # rows put back in value-dim order in registers, then 8 consecutive dims per thread
                ol: gl.constexpr = gl.BlockedLayout([8, 1], [32, 1], [1, NW], [0, 1])
            elif VT_ROWS == 0 and NW == 4:  # lanes on O^T rows r3, r6, r7, r0, r1 = dims 0-31: a warp stores 32 dims
                ol: gl.constexpr = gl.DistributedLinearLayout(
                    reg_bases=[[4, 0], [16, 0], [32, 0], [0, 1], [0, 2]],
                    lane_bases=[[8, 0], [64, 0], [128, 0], [1, 0], [2, 0]],
                    warp_bases=[[0, 4], [0, 8]], block_bases=[], shape=[256, H])
            elif VT_ROWS == 0:  # 8 warps: lanes on rows r3, r7, r0, r1, r2 = value dims 0-31
                ol: gl.constexpr = gl.DistributedLinearLayout(
                    reg_bases=[[16, 0], [32, 0], [64, 0], [0, 1]], lane_bases=[[8, 0], [128, 0], [1, 0], [2, 0], [4, 0]],
                    warp_bases=[[0, 2], [0, 4], [0, 8]], block_bases=[], shape=[256, H])
            else:
                ol: gl.constexpr = gl.BlockedLayout([4, 1], [32, 1], [1, NW], [0, 1])
            norm, lse = _gl_normalizer(m_i, l_i, kv_scale, ol)
            oh = gl.arange(0, H, layout=gl.SliceLayout(0, ol))
            oj = gl.arange(0, 256, layout=gl.SliceLayout(1, ol))  # row of O^T (V^T row order) -> value dim
            if VT_ROWS == 0:  # the row order of _gl_v_operand
                if NW == 4:
                    od = ((oj >> 3) & 1) + ((oj >> 6) & 1) * 2 + ((oj >> 7) & 1) * 4 + (oj & 7) * 8 + ((oj >> 4) & 3) * 64
                else:
                    od = ((oj >> 3) & 1) + ((oj >> 7) & 1) * 2 + (oj & 7) * 4 + ((oj >> 4) & 7) * 32
                o_lo = gl.convert_layout(acc_lo, ol) * norm[None, :]
                o_hi = gl.convert_layout(acc_hi, ol) * norm[None, :]
            elif VEC_EPILOGUE:
                od = oj
                o_lo = gl.convert_layout(_gl_dim_order(acc_lo), ol) * norm[None, :]
                o_hi = gl.convert_layout(_gl_dim_order(acc_hi), ol) * norm[None, :]
            else:
                od = (oj // 32) * 32 + (oj % 4) * 8 + (oj % 32) // 4
                o_lo = gl.convert_layout(acc_lo, ol) * norm[None, :]
                o_hi = gl.convert_layout(acc_hi, ol) * norm[None, :]
            if WRITE_FINAL:
                dst = out_ptr + seq * H * 512 + oh[None, :] * 512 + od[:, None]
                gl.store(dst, o_lo.to(gl.bfloat16))
                gl.store(dst + 256, o_hi.to(gl.bfloat16))
            else:
                part = (seq * num_splits + split) * H
                dst = part_o_ptr + (part + oh[None, :]) * 512 + od[:, None]
                gl.store(dst, o_lo.to(part_o_ptr.dtype.element_ty))  # fp32 or bf16 partials (option part_bf16)
                gl.store(dst + 256, o_hi.to(part_o_ptr.dtype.element_ty))
                gl.store(part_lse_ptr + part + oh, lse)
                if FUSED_MERGE:
                    t_ticket, t_polled = _gl_merge_own_slice(part_o_ptr, part_lse_ptr, out_ptr, counter_ptr, seq, split,
                                                             num_splits, MERGE_ELEMS, NW, TRACE)
        if TRACE:
            slot = trace_ptr + (seq * num_splits + split) * 16
            gl.store(slot, t_start)
            gl.store(slot + 1, t_first)
            gl.store(slot + 2, _gl_globaltimer())
            gl.store(slot + 3, gl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=gl.int32, is_pure=False,
                                                         pack=1).to(gl.int64))
            gl.store(slot + 4, t_kv)
            gl.store(slot + 5, t_q)
            gl.store(slot + 6, t_loop)
            if FUSED_MERGE or CLUSTER_MERGE:
                gl.store(slot + 7, t_ticket)
                gl.store(slot + 8, t_polled)


@triton.jit
def mla_merge_dims_kernel(part_o_ptr, part_lse_ptr, out_ptr, num_splits, SPLITS_CHUNK: tl.constexpr,
                          DIMS: tl.constexpr, PDL: tl.constexpr = False):
    """The unfused merge over (sequence, head, DIMS-wide slice of the value dims): more programs in flight for
    small batches (option merge_dims of the Gluon path)."""
    seq = tl.program_id(0)
    head = tl.program_id(1)
    if PDL:
        tl.extra.cuda.gdc_wait()
    H: tl.constexpr = K_HEADS
    dims = tl.program_id(2) * DIMS + tl.arange(0, DIMS)
    splits = tl.arange(0, SPLITS_CHUNK)
    top = tl.full((SPLITS_CHUNK,), float("-inf"), tl.float32)
    for first in range(0, num_splits, SPLITS_CHUNK):
        live = first + splits < num_splits
        rows = (seq * num_splits + first + splits) * H + head
        top = tl.maximum(top, tl.load(part_lse_ptr + rows, mask=live, other=float("-inf")))
    m = tl.max(top, 0)
    m = tl.where(m == float("-inf"), 0.0, m)
    total = tl.zeros((SPLITS_CHUNK,), tl.float32)
    o = tl.zeros((DIMS,), tl.float32)
    for first in range(0, num_splits, SPLITS_CHUNK):
        live = first + splits < num_splits
        rows = (seq * num_splits + first + splits) * H + head
        w = tl.exp2(tl.load(part_lse_ptr + rows, mask=live, other=float("-inf")) - m)
        parts = tl.load(part_o_ptr + rows[:, None] * K_V_DIM + dims[None, :], mask=live[:, None], other=0.0)
        o += tl.sum(parts * w[:, None], 0)
        total += w
    o = o / tl.maximum(tl.sum(total, 0), 1e-30)
    tl.store(out_ptr + (seq * H + head) * K_V_DIM + dims, o.to(tl.bfloat16))


# ---------------------------------------------------------------------------------------------
# MXFP4-KV path (option kv_format=mxfp4; made for gfx950's scaled MFMA). The scores take the KV's e2m1 bytes
# and e8m0 scales as they come (scale row stride 24) in tl.dot_scaled against Q quantized in the kernel to
# MXFP8 (e4m3, one power-of-two scale per head and 32 dims): on gfx950 that is v_mfma_scale_f32_*_f8f6f4 with
# no decode. P.V cannot take the scales as they come: they are per (token, 32 value dims), along the output
# dim of that product and not along its contraction (tokens), which is the only axis a scaled MMA scales.
# So the values are decoded once per tile (gfx950: the hardware's scaled fp4 -> bf16 conversion, one instruction
# per byte; elsewhere e2m1 -> bf16 by bit placement times the block scale) and P.V is a bf16 dot, the even and
# odd value dims (the two nibbles of a byte) as two dots interleaved at the output.
# ---------------------------------------------------------------------------------------------
@triton.jit
def _mxfp8_quantize(x, BLOCKS: tl.constexpr):
    """(16, BLOCKS * 32) fp32 -> (e4m3 values, e8m0 scale bytes (16, BLOCKS)): 2^(floor(log2 amax) - 7) per block."""
    H: tl.constexpr = K_HEADS
    blocks = tl.reshape(x, (H, BLOCKS, 32))
    amax = tl.max(tl.abs(blocks), 2)
    field = (amax.to(tl.int32, bitcast=True) >> 23) & 0xFF  # biased exponent of the block's largest value
    scale = tl.maximum(field - 7, 0)  # its top element lands in [128, 256): inside e4m3's 448
    inverse = ((254 - scale) << 23).to(tl.float32, bitcast=True)  # 2^(127 - scale), finite for scale >= 0
    scaled = (blocks * inverse[:, :, None]).to(tl.int32, bitcast=True)
    # rounded to e4m3's 3 mantissa bits (nearest, ties to even) in fp32 first, so that the cast is exact: a
    # carry into the exponent is then plain integer arithmetic (the CPU interpreter's own cast drops it)
    scaled = (scaled + 0x7FFFF + ((scaled >> 20) & 1)) & -0x100000
    q8 = tl.reshape(scaled.to(tl.float32, bitcast=True), (H, BLOCKS * 32)).to(tl.float8e4nv)
    return q8, scale.to(tl.uint8)


@triton.jit
def _e2m1_to_bf16(codes, scale_bytes):
    """Low-nibble e2m1 codes (uint8) times 2^(scale - 127), as bf16: the code's bits placed in an fp16
    (sign at 15, exponent and mantissa at 11..9 give value x 2^-14), the 2^14 folded into the scale."""
    bits = ((codes & 8).to(tl.uint16) << 12) | ((codes & 7).to(tl.uint16) << 9)
    scale = ((tl.minimum(scale_bytes.to(tl.int32), 240) + 14) << 23).to(tl.float32, bitcast=True)
    return (bits.to(tl.float16, bitcast=True).to(tl.float32) * scale).to(tl.bfloat16)


@triton.jit
def _pv_half(kv_ptr, scale_row, rows, pb, acc_even, acc_odd, HALF: tl.constexpr, UPCAST: tl.constexpr,
             HW_CVT: tl.constexpr):
    """P.V over value dims 256 * HALF .. + 255: bytes decoded to bf16 (even dims: low nibbles, odd: high)."""
    hb = tl.arange(0, K_V_DIM // 4)
    packed = tl.load(kv_ptr + rows[:, None] * (K_QK_DIM // 2) + HALF * (K_V_DIM // 4) + hb[None, :])
    blocks = tl.load(scale_row + HALF * 8 + tl.arange(0, 8)[None, :])  # 8 contiguous scale bytes per token
    rows_n: tl.constexpr = packed.shape[0]
    if HW_CVT:  # gfx950: one v_cvt_scalef32_pk_bf16_fp4 per byte, two bf16 values times 2^(scale - 127)
        factor = (blocks.to(tl.int32) << 23).to(tl.float32, bitcast=True)
        factor = tl.reshape(tl.broadcast_to(factor[:, :, None], (rows_n, 8, 16)), (rows_n, K_V_DIM // 4))
        pair = tl.inline_asm_elementwise("v_cvt_scalef32_pk_bf16_fp4 $0, $1, $2", "=v,v,v",
                                         [packed.to(tl.int32), factor], dtype=tl.int32, is_pure=True, pack=1)
        v_even = (pair & 0xFFFF).to(tl.uint16).to(tl.bfloat16, bitcast=True)
        v_odd = (pair >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)
    else:
        scale = tl.reshape(tl.broadcast_to(blocks[:, :, None], (rows_n, 8, 16)), (rows_n, K_V_DIM // 4))  # i // 16
        v_even = _e2m1_to_bf16(packed, scale)
        v_odd = _e2m1_to_bf16(packed >> 4, scale)
    if UPCAST:  # the same bf16 values, multiplied in fp32 (the CPU interpreter's bf16 dot is wrong)
        v_even, v_odd = v_even.to(tl.float32), v_odd.to(tl.float32)
    return tl.dot(pb, v_even, acc_even), tl.dot(pb, v_odd, acc_odd)


@triton.jit
def mla_mxfp4_kernel(
    q_ptr, q_stride_t, q_stride_h,
    kv_ptr, kv_scale_ptr,
    kv_indptr_ptr,
    out_ptr, part_o_ptr, part_lse_ptr,
    sm_scale,
    num_splits,
    WRITE_FINAL: tl.constexpr,
    BLOCK_N: tl.constexpr,
    SCALE_STRIDE: tl.constexpr,  # the scale tensor's row stride (24 for aiter's layout): known, so loads vectorize
    UPCAST: tl.constexpr = False,  # P.V in fp32 (the CPU interpreter computes bf16 dots on raw bits)
    HW_CVT: tl.constexpr = False,  # gfx950: values decoded by the hardware's scaled fp4 -> bf16 conversion
):
    split = tl.program_id(0)
    seq = tl.program_id(1)
    H: tl.constexpr = K_HEADS
    ROW_BYTES: tl.constexpr = K_QK_DIM // 2  # 288 packed bytes per token
    V_BYTES: tl.constexpr = K_V_DIM // 2  # the first 256 bytes: value dims 0..511
    lo, hi = _split_slice(kv_indptr_ptr, seq, split, num_splits, BLOCK_N)

    heads = tl.arange(0, H)
    dn = tl.arange(0, K_V_DIM)
    dr = tl.arange(0, K_ROPE_DIM)
    q_row = q_ptr + seq * q_stride_t + heads[:, None] * q_stride_h
    qn8, qn_scale = _mxfp8_quantize(tl.load(q_row + dn[None, :]).to(tl.float32), K_V_DIM // 32)
    # the rope scores as one K = 128 scaled dot on the row's last 64 bytes (value dims 448..511 and the rope),
    # with Q's dims 448..511 zeroed: the scaled MFMA needs K = 128, and these bytes never leave the row
    d_tail = tl.arange(0, 128)
    q_tail = tl.load(q_row + K_V_DIM - 64 + d_tail[None, :]).to(tl.float32) * (d_tail >= 64)[None, :].to(tl.float32)
    qr8, qr_scale = _mxfp8_quantize(q_tail, 4)
    log2e: tl.constexpr = 1.4426950408889634
    score_scale = sm_scale * log2e

    m_i = tl.full((H,), float("-inf"), tl.float32)
    l_i = tl.zeros((H,), tl.float32)
    acc_e0 = tl.zeros((H, K_V_DIM // 4), tl.float32)  # value dims 0, 2, ..., 254
    acc_o0 = tl.zeros((H, K_V_DIM // 4), tl.float32)  # value dims 1, 3, ..., 255
    acc_e1 = tl.zeros((H, K_V_DIM // 4), tl.float32)  # value dims 256, 258, ...
    acc_o1 = tl.zeros((H, K_V_DIM // 4), tl.float32)
    tok = tl.arange(0, BLOCK_N)
    vb = tl.arange(0, V_BYTES)
    rb = tl.arange(0, 64)
    nope_blocks = tl.arange(0, K_V_DIM // 32)
    rope_blocks = tl.arange(0, 4)
    for start in range(lo, hi, BLOCK_N):
        rows = start + tok
        ok = rows < hi
        # rows past the slice read its last row instead (no masks): their scores become -inf, so P is 0 there
        rows = tl.minimum(rows, hi - 1)
        k_nope = tl.load(kv_ptr + rows[:, None] * ROW_BYTES + vb[None, :])
        k_rope = tl.load(kv_ptr + rows[:, None] * ROW_BYTES + V_BYTES - 32 + rb[None, :])  # bytes 224..287
        scale_row = kv_scale_ptr + rows[:, None] * SCALE_STRIDE
        s_nope = tl.load(scale_row + nope_blocks[None, :])  # (BLOCK_N, 16)
        s_rope = tl.load(scale_row + K_V_DIM // 32 - 2 + rope_blocks[None, :])  # blocks 14..17
        # scores (16, BLOCK_N): MXFP8 Q x MXFP4 K^T, the KV's bytes and scales as they are in memory
        s = tl.dot_scaled(qn8, qn_scale, "e4m3", tl.trans(k_nope), s_nope, "e2m1")
        s = tl.dot_scaled(qr8, qr_scale, "e4m3", tl.trans(k_rope), s_rope, "e2m1", acc=s)
        s = tl.where(ok[None, :], s * score_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
        pb = p.to(tl.float32 if UPCAST else tl.bfloat16)
        # values in two halves of 128 bytes (256 dims), read again from the cache: fewer registers live
        acc_e0, acc_o0 = _pv_half(kv_ptr, scale_row, rows, pb, acc_e0 * alpha[:, None], acc_o0 * alpha[:, None],
                                  0, UPCAST, HW_CVT)
        acc_e1, acc_o1 = _pv_half(kv_ptr, scale_row, rows, pb, acc_e1 * alpha[:, None], acc_o1 * alpha[:, None],
                                  1, UPCAST, HW_CVT)

    safe_l = tl.where(l_i > 0, l_i, 1.0)
    o0 = tl.reshape(tl.join(acc_e0, acc_o0), (H, K_V_DIM // 2)) / safe_l[:, None]  # dims back in order
    o1 = tl.reshape(tl.join(acc_e1, acc_o1), (H, K_V_DIM // 2)) / safe_l[:, None]
    dh = tl.arange(0, K_V_DIM // 2)
    if WRITE_FINAL:
        dst = out_ptr + (seq * H + heads[:, None]) * K_V_DIM + dh[None, :]
        tl.store(dst, o0.to(tl.bfloat16))
        tl.store(dst + K_V_DIM // 2, o1.to(tl.bfloat16))
    else:
        part = (seq * num_splits + split) * H
        dst = part_o_ptr + (part + heads[:, None]) * K_V_DIM + dh[None, :]
        tl.store(dst, o0)
        tl.store(dst + K_V_DIM // 2, o1)
        tl.store(part_lse_ptr + part + heads, tl.where(l_i > 0, m_i + tl.log2(safe_l), float("-inf")))


def _compute_units(device: torch.device) -> int:
    if device.type == "cpu":
        return 256 if torch.version.hip else 4  # ROCm on a CPU: the gfx950 emulator, an MI355X's 256 CUs
    return torch.cuda.get_device_properties(device).multi_processor_count


def choose_splits(batch: int, mean_kv: int, compute_units: int, block_n: int, programs_per_cu: int,
                  min_tokens: int = 128, fused: bool = True, gluon: bool = False) -> int:
    """Splits per sequence minimizing the time of the busiest SM/CU + the cost of merging the partials, in tiles.

    Triton path (measured on the H200, bench/NOTES.md, issue 12): a 64-token tile takes ~5 us of one program's
    time (two programs share an SM), so time is counted in waves x tiles per program. The fused merge is one
    program reading every split's 32 KB partial in turn (~0.1 tile each); the unfused merge is one more launch
    (~0.5 tile) spread over (sequence, head) programs. Batches that fill the device keep one split.
    gluon (the sm90 default, V^T in registers): an SM moves tiles at the same rate with one or two programs (its
    share of the bandwidth), so time is the busiest SM's tiles; a lone program per SM pays ~8% more per tile (less
    latency hidden); the merge costs 0.5 + batch x splits / 32 tiles (64 KB of partials written and read per
    split); ties go to more splits. Fitted by hand to the splits sweep of 2026-12-01 (1 to 32 splits on the 8
    official shapes, bench/NOTES.md, issue 20), not a fit over all counts; the same sweep with TMA tiles and the fused
    merge (issue 20, third round) still found these counts best or level.
    """
    most = max(1, min(64, mean_kv // min_tokens))
    best, best_cost = 1, None
    for splits in range(1, most + 1):
        programs = batch * splits
        tiles = -(-(-(-mean_kv // splits)) // block_n)
        if gluon:
            per_sm = -(-programs // compute_units)
            lone = 1.08 if programs <= compute_units else 1.0
            merge = 0.5 + programs / 32.0 if splits > 1 else 0.0
            cost = per_sm * (tiles + 0.3) * lone + merge
        else:
            waves = -(-programs // (compute_units * programs_per_cu))
            merge = (0.1 * splits if fused else 0.5 + splits / 64.0) if splits > 1 else 0.0
            cost = waves * (tiles + 0.3) + merge  # 0.3: a program's prologue (Q load and quantization)
        if best_cost is None or cost < best_cost - 1e-9 or (gluon and cost <= best_cost + 1e-9):
            best, best_cost = splits, cost
    return best


def gluon_usable(device: torch.device) -> bool:
    """The Gluon kernel runs on CUDA sm90 only (wgmma, cp.async), never under the interpreter."""
    return (HAVE_GLUON and not INTERPRETED and device.type == "cuda" and not torch.version.hip
            and torch.cuda.get_device_capability(device)[0] == 9)


def gluon_shared_bytes(plan: dict) -> int:
    """Shared memory of one Gluon program: KV stages, V^T buffer, P, Q (layout-conversion scratch reuses it)."""
    block = plan.get("gluon_block", 64)  # 128: two warpgroups per program
    return plan["stages"] * block * 576 + plan["vt_rows"] * 64 + 16 * block + 16 * 576  # vt_rows 0: V^T in registers


MXFP4_LAUNCH = {"block_n": 32, "num_warps": 4, "num_stages": 1}


def platform_defaults(device: torch.device) -> dict:
    """Launch options per platform (bench/NOTES.md, issue 12, has the measurements behind them)."""
    plan = {"block_n": 64, "num_warps": 4, "num_stages": 2, "pv_fp8": 0, "pv_chunks": 1, "reload": 0, "early_v": 0,
            "maxnreg": 0, "fused": 0, "programs_per_cu": 2, "splits": None, "min_tokens": 128,
            "gluon": 0, "stages": 2, "vt_rows": 256, "smodel": 1, "merge_dims": 0, "async_mma": 0, "part_bf16": 0,
            "pdl": 0, "late_refill": 0, "vec_epilogue": 0, "mxfp4": 0, "lazy_sum": 0,
            "gluon_block": 64, "fused_merge": 0, "tma": 0, "l2_evict_first": 0, "direct_partials": 0, "cluster_merge": 0}
    if device.type == "cpu" and not torch.version.hip:  # the interpreter (ROCm on a CPU: the gfx950 emulator)
        plan.update(num_stages=1, programs_per_cu=1)
    elif not torch.version.hip:
        # Hopper: fp8 P.V needs V transposed at byte granularity in shared memory (byte stores: measured
        # 51 us at 4 x 1k); 128-dim value chunks loaded again and upcast to fp16 transpose in registers
        # (PRMT), 236 registers, no spills in triton 3.6's sm90 code, 2 programs per SM. The separate merge
        # kernel (fused=0) measured faster than the last-program merge on the small shapes (17.6 vs 19.6 us
        # at 4 x 1k, 34.1 vs 39.8 at 4 x 8k) and equal on the large ones.
        plan.update(pv_fp8=0, pv_chunks=4, reload=1, num_stages=1)
        if gluon_usable(device):
            # sm90 with Gluon: the explicit-layout kernel (fp8 wgmma for both dots, V^T transposed once per tile
            # in shared memory); `gluon=0` keeps the Triton path above reachable. The merge kernel is launched as a
            # programmatic dependent (pdl): its launch overlaps the split kernel, measured 1-2 us off the split
            # shapes (bench/NOTES.md, issue 20).
            # Issue 20 (2026-12-01 PM): V^T is the P.V wgmma's register operand (vt_rows=0: no V^T in shared memory,
            # 810 -> 678 SASS instructions per tile), the softmax denominators are summed once (lazy_sum) and V's
            # shared loads overlap the wgmmas (async_mma): 256 x 8k 356 -> 298 us, at the fp8 byte floor.
            # Issue 20 (third round): tiles come by TMA (tma, mbarrier waits; cp.async measured 38.9 -> 39.6 us) and
            # the splits of a sequence merge it themselves in a cooperative launch (fused_merge: no merge kernel,
            # 1-2 us off the small split shapes); bench/NOTES.md has the calls.
            # Issue 31 (2026-12-02): the tile copies carry an L2 evict-first policy when the KV is at most 4x the L2
            # (l2_evict_first -1: by size; 1 / 0 force it): the dirty lines the harness's flush leaves are then not
            # the victims (ncu: 29 -> 10 MB written back at 32 x 8k); larger KVs measured slower with it (256 x 8k
            # 283 -> 297 us), bench/notes/2026-12-02-issue31.md.
            # Issue 31 (2026-12-02, third round): with the fused merge, each split stores its partial straight from
            # the P.V accumulator (direct_partials: no layout conversion through shared memory, 8 or 4 contiguous
            # bytes per thread) and in bf16 (part_bf16 -1: bf16 where direct partials are taken): the epilogue
            # 2.1 -> 1.5 us, the geomean 36.7 -> 35.8 us in one call (bench/notes/2026-12-02-issue31-round3.md).
            plan.update(gluon=1, pdl=1, vt_rows=0, lazy_sum=1, async_mma=1, min_tokens=64, tma=1, fused_merge=1,
                        l2_evict_first=-1, direct_partials=1, part_bf16=-1)
    elif torch.version.hip:
        # gfx950 MFMA takes fp8 P.V as is. 32-token tiles without software pipelining: 236 VGPR, 2 waves per SIMD
        # (64-token tiles with 2 stages: 374, 1 wave); loop VALU ~1,890 cycles per 64 tokens per CU against
        # ~2,830 of fp8 bytes at 8 TB/s (AOT estimate, bench/NOTES.md issue 20; not measured on an MI355X).
        plan.update(num_stages=1, block_n=32, pv_fp8=1, programs_per_cu=2)
    return plan


def _plan(q: torch.Tensor, total_kv: int, batch: int, tuning: dict) -> dict:
    key = (q.device, q.shape[0], total_kv, batch, tuple(sorted(tuning.items())))
    plan = _PLAN_CACHE.get(key)
    if plan is None:
        plan = platform_defaults(q.device)
        plan.update(tuning)
        if plan["mxfp4"]:
            plan["gluon"] = 0  # the MXFP4 kernel is a Triton kernel on every platform
            # gfx950: 32-token tiles, 4 waves, no software pipelining: 186 VGPR, 2 waves per SIMD (NOTES, issue 20)
            plan.update({k: v for k, v in MXFP4_LAUNCH.items() if k not in tuning})
        if plan["gluon"]:
            if not gluon_usable(q.device):
                raise ValueError("the Gluon path needs triton.experimental.gluon and an sm90 CUDA device")
            if plan["l2_evict_first"] < 0:  # by size: the KV's bytes against 4x the L2
                l2_bytes = torch.cuda.get_device_properties(q.device).L2_cache_size
                plan["l2_evict_first"] = int(total_kv * QK_DIM <= 4 * l2_bytes)
            if plan["l2_evict_first"] and plan["tma"]:
                _install_l2_hint_stage()
            if "programs_per_cu" not in tuning:  # CTAs per SM from the shared memory of one program
                plan["programs_per_cu"] = max(1, (233472 - 1024) // (gluon_shared_bytes(plan) + 1024))
        if plan["splits"] is None:
            plan["splits"] = choose_splits(batch, max(1, total_kv // batch), _compute_units(q.device),
                                           plan["block_n"], plan["programs_per_cu"], plan["min_tokens"],
                                           bool(plan["fused"]), bool(plan["gluon"] and plan["smodel"]))
        if (plan["gluon"] and "merge_dims" not in tuning and plan["splits"] >= 16
                and batch * NUM_HEADS * 2 <= _compute_units(q.device)):
            plan["merge_dims"] = 128  # few (sequence, head) pairs, many splits: merge by 128-dim slices (4 x 8k)
        splits = plan["splits"]
        # fused merge: a power-of-two split count and a grid that fits on the device at once (cooperative launch)
        plan["fused_merge_taken"] = bool(plan["gluon"] and plan["fused_merge"] and 1 < splits <= 64
                                         and splits == triton.next_power_of_2(splits)
                                         and batch * splits <= _compute_units(q.device) * plan["programs_per_cu"])
        # the direct partials' word order is the accumulator's of one warpgroup with V^T in registers
        accumulator_order = plan["vt_rows"] == 0 and plan["gluon_block"] == 64
        # cluster merge: the splits of a sequence are one cluster (at most 16 programs), no cooperative launch
        plan["cluster_merge_taken"] = bool(plan["gluon"] and plan["cluster_merge"] and 1 < splits <= 16
                                           and splits == triton.next_power_of_2(splits) and accumulator_order)
        if plan["cluster_merge_taken"]:
            plan["fused_merge_taken"] = False
        plan["direct_partials_taken"] = bool((plan["fused_merge_taken"] and plan["direct_partials"]
                                              and accumulator_order) or plan["cluster_merge_taken"])
        rows = batch * splits * NUM_HEADS
        if splits > 1:
            if plan["part_bf16"] < 0:  # bf16 with direct partials only (the merge kernels measured slower on it)
                plan["part_bf16"] = int(plan["direct_partials_taken"])
            part_dtype = torch.bfloat16 if plan["part_bf16"] else torch.float32
            plan["part_o"] = torch.empty((rows, V_DIM), dtype=part_dtype, device=q.device)
            plan["part_lse"] = torch.empty((rows,), dtype=torch.float32, device=q.device)
            plan["counter"] = torch.zeros((batch,), dtype=torch.int32, device=q.device)
        _PLAN_CACHE[key] = plan
    return plan


def _kv_descriptors(kv: torch.Tensor, block: int) -> tuple:
    """TMA descriptors of the (tokens, 576) fp8 KV: one box per tile for the nope part, one for the rope part. Made
    on every call: they hold the KV's address, and a cache keyed by it would serve a new input at a reused address."""
    sw128 = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
    sw64 = gl.NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=8, rank=2)
    return (GluonTensorDescriptor(kv, list(kv.shape), list(kv.stride()), [block, 512], sw128),
            GluonTensorDescriptor(kv, list(kv.shape), list(kv.stride()), [block, 64], sw64))


def _cluster_kernel(args: list, options: dict, splits: int, batch: int) -> int:
    """Compile the cluster-merge kernel without launching it and make its launches clusters of `splits` programs
    with an area past Triton's shared memory (X_BYTES: received and staged words and log-sum-exps, an mbarrier);
    returns the area's byte offset. Triton's launcher takes both from the compiled kernel's metadata (num_ctas,
    shared), read when the kernel is first loaded: set here, before that."""
    compiled = mla_fp8_gluon_kernel.warmup(*args, grid=(1, batch), **options)
    compiled = compiled.result() if hasattr(compiled, "result") else compiled
    if getattr(compiled, "xchg_offset", None) is None:
        if compiled.module is not None:
            raise RuntimeError("the cluster-merge kernel was loaded before its cluster launch was set")
        offset = -(-compiled.metadata.shared // 128) * 128
        shared = offset + X_BYTES
        compiled.metadata = compiled.metadata._replace(shared=shared, num_ctas=splits)
        compiled.packed_metadata = (compiled.metadata.num_warps, splits, shared)
        compiled.xchg_offset = offset
    return compiled.xchg_offset


def mla_decode(data: input_t, **tuning) -> output_t:
    """The fp8-KV decode; tuning may set splits, block_n, num_warps, num_stages, pv_fp8, fused."""
    q, kv_data, qo_indptr, kv_indptr, config = data
    batch = config["batch_size"]
    if q.shape[0] != batch:
        raise ValueError(f"only q_seq_len = 1 is supported, got {q.shape[0]} queries for {batch} sequences")
    if q.stride(-1) != 1:
        q = q.contiguous()
    plan = _plan(q, kv_data["fp8"][0].shape[0], batch, tuning)
    out = torch.empty((batch, NUM_HEADS, V_DIM), dtype=torch.bfloat16, device=q.device)
    splits = plan["splits"]
    fused = bool(plan["fused"]) and splits > 1
    if splits > 1:
        part_o, part_lse, counter = plan["part_o"], plan["part_lse"], plan["counter"]
    else:
        part_o, part_lse, counter = out, out, kv_indptr
    pow2 = triton.next_power_of_2(splits)
    if plan["mxfp4"]:
        packed, scales = kv_data["mxfp4"]
        packed, scales = packed.view(torch.uint8), scales.view(torch.uint8)
        mla_mxfp4_kernel[(splits, batch)](
            q, q.stride(0), q.stride(1), packed.reshape(packed.shape[0], QK_DIM // 2), scales,
            kv_indptr, out, part_o, part_lse, float(config["sm_scale"]), splits,
            WRITE_FINAL=splits == 1, BLOCK_N=plan["block_n"], SCALE_STRIDE=scales.stride(0), UPCAST=INTERPRETED,
            HW_CVT=bool(torch.version.hip) and not INTERPRETED, num_warps=plan["num_warps"],
            num_stages=plan["num_stages"])
        if splits > 1:
            mla_merge_kernel[(batch, NUM_HEADS)](part_o, part_lse, out, splits, SPLITS_CHUNK=min(16, pow2), num_warps=4)
        return out
    kv8, kv_scale = kv_data["fp8"]
    kv = kv8.reshape(kv8.shape[0], QK_DIM)
    if plan["gluon"]:
        fused_merge, cluster = plan["fused_merge_taken"], plan["cluster_merge_taken"]
        warps = plan["gluon_block"] // 16
        descs = _kv_descriptors(kv, plan["gluon_block"]) if plan["tma"] else (None, None)
        args = [q, q.stride(0), q.stride(1), kv, kv_scale, kv_indptr, out, part_o, part_lse, counter,
                float(config["sm_scale"]), splits, plan.get("trace", kv_indptr), *descs, plan.get("xchg_offset", 128)]
        options = dict(
            WRITE_FINAL=splits == 1, BLOCK_N=plan["gluon_block"], STAGES=plan["stages"], VT_ROWS=plan["vt_rows"],
            ASYNC=bool(plan["async_mma"]) and plan["vt_rows"] in (0, 256),
            PDL_TRIGGER=bool(plan["pdl"]) and splits > 1 and not (fused_merge or cluster),
            LATE_REFILL=bool(plan["late_refill"]), VEC_EPILOGUE=bool(plan["vec_epilogue"]),
            LAZY_SUM=bool(plan["lazy_sum"]), NW=warps, TRACE="trace" in plan,
            TMA=bool(plan["tma"]), FUSED_MERGE=fused_merge,
            L2_EVICT_FIRST=bool(plan["tma"] and plan["l2_evict_first"]),
            DIRECT_PARTIALS=plan["direct_partials_taken"], CLUSTER_MERGE=cluster,
            MERGE_ELEMS=V_DIM * NUM_HEADS // splits if fused_merge or cluster else 512,
            num_warps=warps, **({"launch_cooperative_grid": True} if fused_merge else {}))
        if cluster:
            if "xchg_offset" not in plan:
                plan["xchg_offset"] = _cluster_kernel(args, options, splits, batch)
                args[-1] = plan["xchg_offset"]
            mla_fp8_gluon_kernel[(1, batch)](*args, **options)  # (1, batch) clusters of `splits` programs
            return out
        mla_fp8_gluon_kernel[(splits, batch)](*args, **options)
        if fused_merge:
            return out
        pdl = {"PDL": True, "launch_pdl": True} if plan["pdl"] else {}
        if splits > 1 and plan["merge_dims"]:
            mla_merge_dims_kernel[(batch, NUM_HEADS, V_DIM // plan["merge_dims"])](
                part_o, part_lse, out, splits, SPLITS_CHUNK=min(32, pow2), DIMS=plan["merge_dims"], num_warps=4,
                **pdl)
        elif splits > 1:
            mla_merge_kernel[(batch, NUM_HEADS)](part_o, part_lse, out, splits, SPLITS_CHUNK=min(16, pow2),
                                                 num_warps=4, **pdl)
        return out
    mla_fp8_kernel[(splits, batch)](
        q, q.stride(0), q.stride(1), kv, kv_scale, kv_indptr, out, part_o, part_lse, counter,
        float(config["sm_scale"]), splits,
        WRITE_FINAL=splits == 1, FUSED_REDUCE=fused, SPLITS_POW2=pow2, BLOCK_N=plan["block_n"],
        PV_FP8=bool(plan["pv_fp8"]), PV_CHUNKS=plan["pv_chunks"], CHUNKS_RELOAD=bool(plan["reload"]),
        EARLY_V=bool(plan["early_v"]), num_warps=plan["num_warps"], num_stages=plan["num_stages"],
        **({"maxnreg": plan["maxnreg"]} if plan["maxnreg"] else {}),
    )
    if splits > 1 and not fused:
        mla_merge_kernel[(batch, NUM_HEADS)](part_o, part_lse, out, splits, SPLITS_CHUNK=min(16, pow2), num_warps=4)
    return out


def custom_kernel(data: input_t) -> output_t:
    return mla_decode(data)


# Representative launches for ahead-of-time compilation (the convention of harness/compile/aot.py).
_ARGS = {
    "q_ptr": "*bf16:16", "q_stride_t": "i32:16", "q_stride_h": "i32:16",
    "kv_ptr": "*fp8e4nv:16", "kv_scale_ptr": "*fp32:16", "kv_indptr_ptr": "*i32:16",
    "out_ptr": "*bf16:16", "part_o_ptr": "*fp32:16", "part_lse_ptr": "*fp32:16", "counter_ptr": "*i32:16",
    "sm_scale": "fp32", "num_splits": "i32",
}
_MX_ARGS = {
    "q_ptr": "*bf16:16", "q_stride_t": "i32:16", "q_stride_h": "i32:16",
    "kv_ptr": "*u8:16", "kv_scale_ptr": "*u8:16", "kv_indptr_ptr": "*i32:16",
    "out_ptr": "*bf16:16", "part_o_ptr": "*fp32:16", "part_lse_ptr": "*fp32:16",
    "sm_scale": "fp32", "num_splits": "i32",
}
AOT_SPECS = [
    # Hopper (custom_kernel's NVIDIA choice): fp16 P.V on reloaded value chunks, no pipelining.
    {"kernel": "mla_fp8_kernel", "label": "sm90 default: fp16 P.V chunks, split partials", "signature": _ARGS,
     "constexprs": {"WRITE_FINAL": False, "FUSED_REDUCE": False, "SPLITS_POW2": 8, "BLOCK_N": 64, "PV_FP8": False,
                    "PV_CHUNKS": 4, "CHUNKS_RELOAD": True},
     "num_warps": 4, "num_stages": 1},
    {"kernel": "mla_fp8_kernel", "label": "sm90 default: fp16 P.V chunks, final output", "signature": _ARGS,
     "constexprs": {"WRITE_FINAL": True, "FUSED_REDUCE": False, "SPLITS_POW2": 1, "BLOCK_N": 64, "PV_FP8": False,
                    "PV_CHUNKS": 4, "CHUNKS_RELOAD": True},
     "num_warps": 4, "num_stages": 1},
    # gfx950 (custom_kernel's ROCm choice): fp8 x fp8 MFMA for both dots, the score tile reused for P.V.
    {"kernel": "mla_fp8_kernel", "label": "gfx950 default: fp8 P.V, split partials", "signature": _ARGS,
     "constexprs": {"WRITE_FINAL": False, "FUSED_REDUCE": False, "SPLITS_POW2": 8, "BLOCK_N": 32, "PV_FP8": True},
     "num_warps": 4, "num_stages": 1},
    {"kernel": "mla_fp8_kernel", "label": "gfx950 default: fp8 P.V, final output", "signature": _ARGS,
     "constexprs": {"WRITE_FINAL": True, "FUSED_REDUCE": False, "SPLITS_POW2": 1, "BLOCK_N": 32, "PV_FP8": True},
     "num_warps": 4, "num_stages": 1},
    {"kernel": "mla_fp8_kernel", "label": "option: fused last-program merge (fp8 P.V)", "signature": _ARGS,
     "constexprs": {"WRITE_FINAL": False, "FUSED_REDUCE": True, "SPLITS_POW2": 8, "BLOCK_N": 64, "PV_FP8": True},
     "num_warps": 4, "num_stages": 2},
    {"kernel": "mla_merge_kernel", "label": "merge kernel, 16 splits per load",
     "signature": {"part_o_ptr": "*fp32:16", "part_lse_ptr": "*fp32:16", "out_ptr": "*bf16:16", "num_splits": "i32"},
     "constexprs": {"SPLITS_CHUNK": 16}, "num_warps": 4},
    {"kernel": "mla_merge_dims_kernel", "label": "option merge_dims: merge by 128-dim slices, 32 splits per load",
     "signature": {"part_o_ptr": "*fp32:16", "part_lse_ptr": "*fp32:16", "out_ptr": "*bf16:16", "num_splits": "i32"},
     "constexprs": {"SPLITS_CHUNK": 32, "DIMS": 128}, "num_warps": 4},
    # MXFP4 KV (option mxfp4=1; gfx950 launch): scaled-MFMA scores on the e2m1 bytes and e8m0 scales as they come,
    # values by the hardware's scaled fp4 -> bf16 conversion, bf16 MFMA for P.V.
    {"kernel": "mla_mxfp4_kernel", "label": "mxfp4 (gfx950): scaled-MFMA scores, split partials", "signature": _MX_ARGS,
     "constexprs": {"WRITE_FINAL": False, "BLOCK_N": 32, "SCALE_STRIDE": 24, "UPCAST": False, "HW_CVT": True},
     "num_warps": 4, "num_stages": 1},
    {"kernel": "mla_mxfp4_kernel", "label": "mxfp4 (gfx950): final output", "signature": _MX_ARGS,
     "constexprs": {"WRITE_FINAL": True, "BLOCK_N": 32, "SCALE_STRIDE": 24, "UPCAST": False, "HW_CVT": True},
     "num_warps": 4, "num_stages": 1},
    # mla_fp8_gluon_kernel (the sm90 default) is a Gluon kernel: harness/compile/aot.py compiles @triton.jit kernels
    # only; tests/test_kernel_201.py compiles it for sm90 with Gluon's own AST source.
]
