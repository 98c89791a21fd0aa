"""Portable reference for amd-mixed-mla (DeepSeek-R1 forward_absorb MLA decode).

Same contract as the official reference.py: generate_input, ref_kernel, check_implementation.
On a ROCm device with aiter, ref_kernel is aiter's a8w8 persistent mla_decode_fwd, like the
official one; everywhere else it is the same math in torch (fp8 Q and KV, fp32 scores and
softmax, bf16 out). The quantizers reproduce sglang's per-tensor fp8 and aiter's
dynamic_mxfp4_quant bit for bit, on any device.

This file sits beside submissions exactly like the official one, so it never imports harness.
"""
import math
import os
import sys

import torch

from task import input_t, output_t

NUM_HEADS = 16
NUM_KV_HEADS = 1
KV_LORA_RANK = 512
QK_ROPE_HEAD_DIM = 64
QK_HEAD_DIM = KV_LORA_RANK + QK_ROPE_HEAD_DIM  # 576
V_HEAD_DIM = KV_LORA_RANK  # 512
SM_SCALE = 1.0 / math.sqrt(QK_HEAD_DIM)
NUM_KV_SPLITS = 32  # the official persistent kernel's split count
MXFP4_BLOCK = 32

# Correctness settings. The official code uses 1e-1 / 1e-1 (the problem README's 2e-2 / 8e-3 is stale).
RTOL = 1e-1
ATOL = 1e-1
MISMATCH_RATIO_LIMIT = 0.05  # an MLA output passes when at most this share of elements is not close

# Largest dequantized-KV working set the torch reference builds at once (bytes of float32).
REFERENCE_CHUNK_BYTES = 1 << 28
# Elements the quantizers convert at once: their temporaries stay at tens of MB whatever the KV size.
QUANTIZE_CHUNK_ELEMENTS = 1 << 22

DEVICE_ENV = "MLA_DEVICE"  # force the device: "cpu", "cuda", "cuda:1", ...


# ---------------------------------------------------------------------------
# Platform
# ---------------------------------------------------------------------------

def default_device() -> torch.device:
    """The device inputs are generated on: $MLA_DEVICE, else the GPU when there is one, else the CPU."""
    forced = os.environ.get(DEVICE_ENV)
    if forced:
        return torch.device(forced)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def gpu_arch(device: torch.device | str | None = None) -> str:
    """'gfx950', 'gfx942', 'sm_90', ... for a GPU device; 'cpu' otherwise."""
    device = torch.device(device) if device is not None else default_device()
    if device.type != "cuda" or not torch.cuda.is_available():
        return "cpu"
    props = torch.cuda.get_device_properties(device)
    if torch.version.hip:
        return props.gcnArchName.split(":")[0]
    return f"sm_{props.major}{props.minor}"


def fp8_dtype(device: torch.device | str | None = None) -> torch.dtype:
    """The fp8 flavour aiter uses: e4m3fnuz on gfx942 (MI300), e4m3fn on gfx950 and everywhere else."""
    return torch.float8_e4m3fnuz if gpu_arch(device).startswith("gfx942") else torch.float8_e4m3fn


# ---------------------------------------------------------------------------
# fp8: sglang's dynamic per-tensor quantization
# ---------------------------------------------------------------------------

def quantize_fp8(x: torch.Tensor, dtype: torch.dtype | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """scale = max|x| / fp8_max (amax >= 1e-12); x8 = clamp(x / scale) as fp8. Returns (x8, scale of shape (1,))."""
    dtype = dtype or fp8_dtype(x.device)
    finfo = torch.finfo(dtype)
    pieces = x.reshape(-1).split(QUANTIZE_CHUNK_ELEMENTS)  # views: the temporaries of one piece at a time
    amax = torch.stack([piece.abs().amax() for piece in pieces]).amax().clamp(min=1e-12)
    scale = amax / finfo.max
    x8 = torch.empty(x.shape, dtype=dtype, device=x.device)
    for piece, out in zip(pieces, x8.view(-1).split(QUANTIZE_CHUNK_ELEMENTS)):
        out.copy_((piece / scale).clamp(min=finfo.min, max=finfo.max).to(dtype))
    return x8, scale.to(torch.float32).reshape(1)


def dequantize_fp8(x8: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """float32 values of an fp8 tensor with its per-tensor scale."""
    return x8.to(torch.float32) * scale.to(torch.float32)


# ---------------------------------------------------------------------------
# MXFP4: aiter's dynamic_mxfp4_quant (unshuffled), blocks of 32 along the last dim
# ---------------------------------------------------------------------------

# E2M1 magnitudes by 3-bit code.
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
# Code boundaries: a magnitude above a boundary takes the next code; one exactly on it follows the tie rule.
_E2M1_UPPER = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)
# Tie rules. "away": the pinned aiter (f3be04a12a), whose bit rule ((e << 2 | m >> 21) + 1) >> 1 rounds
# every tie up in magnitude. "even": aiter from e6af9a48 (v0.1.12+), round half to the even code.
_TIE_GOES_UP = {
    "away": (True,) * 7,
    "even": (False, True, False, True, False, True, False),
}
MXFP4_ROUNDING = "away"  # the official runner's aiter; "even" only to compare with later aiter

# The scale tensor aiter allocates: rows up to a multiple of 256, columns (blocks per row) up to a multiple
# of 8; for the task's 576 dims that is 24 columns of which 18 are blocks.
MXFP4_SCALE_ROW_MULTIPLE = 256
MXFP4_SCALE_COLUMN_MULTIPLE = 8


def e8m0_scale_exponent(amax: torch.Tensor) -> torch.Tensor:
    """Unbiased block exponent: round amax up at mantissa >= 0.75 (bit trick), floor(log2) - 2, clamp to [-127, 127]."""
    bits = amax.to(torch.float32).contiguous().view(torch.int32).to(torch.int64)
    rounded = ((bits + 0x200000) & 0x7F800000).to(torch.int32).view(torch.float32)
    exponent = torch.floor(torch.log2(rounded)) - 2  # log2(0) = -inf, clamped below
    return exponent.clamp(-127, 127).to(torch.int32)


def e2m1_encode(x: torch.Tensor, rounding: str = MXFP4_ROUNDING) -> torch.Tensor:
    """4-bit E2M1 codes (uint8) of float32 values: nearest, ties by `rounding`, saturate at 6, sign from its bit."""
    if rounding not in _TIE_GOES_UP:
        raise ValueError(f"unknown E2M1 rounding {rounding!r}: use 'away' or 'even'")
    magnitude = x.abs()
    code = torch.zeros(x.shape, dtype=torch.uint8, device=x.device)
    for boundary, tie_up in zip(_E2M1_UPPER, _TIE_GOES_UP[rounding]):
        above = magnitude >= boundary if tie_up else magnitude > boundary
        code += above.to(torch.uint8)
    sign = torch.signbit(x).to(torch.uint8) << 3
    return code | sign


def e2m1_decode(code: torch.Tensor) -> torch.Tensor:
    """float32 values of 4-bit E2M1 codes."""
    table = torch.tensor(E2M1_VALUES + tuple(-v for v in E2M1_VALUES), dtype=torch.float32, device=code.device)
    return table[(code & 0xF).long()]


def e8m0_decode(scale_bytes: torch.Tensor) -> torch.Tensor:
    """float32 of e8m0 bytes: b -> 2^(b-127); 0 -> 2^-127; 255 -> NaN."""
    b = scale_bytes.contiguous().view(torch.uint8).to(torch.int32)
    values = torch.ldexp(torch.ones_like(b, dtype=torch.float32), b - 127)
    return torch.where(b == 255, torch.full_like(values, float("nan")), values)


def _as_fp4x2(packed: torch.Tensor) -> torch.Tensor:
    return packed.view(torch.float4_e2m1fn_x2) if hasattr(torch, "float4_e2m1fn_x2") else packed


def _as_e8m0(scales: torch.Tensor) -> torch.Tensor:
    return scales.view(torch.float8_e8m0fnu) if hasattr(torch, "float8_e8m0fnu") else scales


def mxfp4_scale_shape(rows: int, blocks_per_row: int) -> tuple[int, int]:
    """Shape of aiter's scale tensor: (cdiv(rows, 256) * 256, cdiv(blocks_per_row, 8) * 8), e.g. (256, 24)."""
    padded_rows = -(-rows // MXFP4_SCALE_ROW_MULTIPLE) * MXFP4_SCALE_ROW_MULTIPLE
    return padded_rows, -(-blocks_per_row // MXFP4_SCALE_COLUMN_MULTIPLE) * MXFP4_SCALE_COLUMN_MULTIPLE


def _unwritten_bytes(count: int, device: torch.device) -> torch.Tensor:
    """Fresh random bytes on every call (not from any seeded generator), standing in for torch.empty's garbage."""
    if count == 0:
        return torch.empty(0, dtype=torch.uint8, device=device)
    return torch.frombuffer(bytearray(os.urandom(count)), dtype=torch.uint8).to(device)


def quantize_mxfp4(x: torch.Tensor, rounding: str = MXFP4_ROUNDING) -> tuple[torch.Tensor, torch.Tensor]:
    """aiter's dynamic_mxfp4_quant of x (..., N): fp4x2 data (..., N/2) and its e8m0 scale tensor.

    The scales come in aiter's layout, mxfp4_scale_shape: (cdiv(rows, 256) * 256, 24) for N = 576, with
    rows = numel / N. The first rows rows are written in full (columns N/32.. hold 0x00: aiter quantizes
    them as empty blocks, scale -127, which wraps to 0); the rows past them are never written, so they
    hold bytes that change from call to call. Readers use the corner [:rows, :N/32] and the row stride.
    """
    n = x.shape[-1]
    assert n % MXFP4_BLOCK == 0, f"last dim {n} is not a multiple of {MXFP4_BLOCK}"
    blocks_per_row = n // MXFP4_BLOCK
    rows = x.numel() // n
    padded_rows, columns = mxfp4_scale_shape(rows, blocks_per_row)
    packed = torch.empty((rows, n // 2), dtype=torch.uint8, device=x.device)
    scale_bytes = torch.empty((padded_rows, columns), dtype=torch.uint8, device=x.device)
    scale_bytes[:rows] = 0  # aiter writes every column of these rows; the ones past the blocks get 0x00
    chunk = max(1, QUANTIZE_CHUNK_ELEMENTS // n)  # the float32 temporaries of a few rows at a time
    chunks = zip(x.reshape(rows, blocks_per_row, MXFP4_BLOCK).split(chunk), packed.split(chunk),
                 scale_bytes[:rows, :blocks_per_row].split(chunk))
    for rows_in, packed_out, scales_out in chunks:
        blocks = rows_in.to(torch.float32)
        exponent = e8m0_scale_exponent(blocks.abs().amax(dim=-1, keepdim=True))
        scaled = blocks * torch.ldexp(torch.ones_like(blocks[..., :1]), -exponent)
        codes = e2m1_encode(scaled, rounding).reshape(-1, n)
        packed_out.copy_(codes[:, 0::2] | (codes[:, 1::2] << 4))  # low nibble = even index
        scales_out.copy_((exponent.squeeze(-1) + 127).to(torch.uint8))
    scale_bytes[rows:] = _unwritten_bytes((padded_rows - rows) * columns, x.device).reshape(-1, columns)
    return _as_fp4x2(packed.reshape(*x.shape[:-1], n // 2)), _as_e8m0(scale_bytes)


def dequantize_mxfp4(packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """float32 values (..., 2 * packed.shape[-1]) of MXFP4 data; reads only the [:rows, :N/32] scale corner."""
    raw = packed.contiguous().view(torch.uint8)
    n = raw.shape[-1] * 2
    rows = raw.numel() * 2 // n
    codes = torch.stack((raw & 0xF, raw >> 4), dim=-1).reshape(rows, n // MXFP4_BLOCK, MXFP4_BLOCK)
    corner = scales.view(torch.uint8)[:rows, : n // MXFP4_BLOCK]  # a view: the row stride stays the tensor's own
    values = e2m1_decode(codes) * e8m0_decode(corner).unsqueeze(-1)
    return values.reshape(*raw.shape[:-1], n)


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

def generate_input(
    batchsize: int,
    qseqlen: int,
    kvseqlen: int,
    seed: int,
    *,
    device: torch.device | str | None = None,
    kv_seq_lens: list[int] | None = None,
    stress: str | None = None,
) -> input_t:
    """The official input structure: q and bf16 KV drawn with randn from a seeded generator, fp8 and mxfp4 from the bf16 KV.

    kv_seq_lens gives every sequence its own KV length (uneven segments); kvseqlen then only fills config.
    The mxfp4 scales have aiter's padded layout (quantize_mxfp4): their pad rows differ on every call,
    even with the same seed, so a kernel that reads them is caught.
    stress (not part of the official task) shapes the randn data so that shortcuts show: see STRESS_KINDS.
    """
    device = torch.device(device) if device is not None else default_device()
    lens = list(kv_seq_lens) if kv_seq_lens is not None else [kvseqlen] * batchsize
    if len(lens) != batchsize or min(lens, default=1) < 1:
        raise ValueError(f"kv_seq_lens must hold {batchsize} positive lengths, got {lens}")
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    total_q, total_kv = batchsize * qseqlen, sum(lens)
    q = torch.randn((total_q, NUM_HEADS, QK_HEAD_DIM), dtype=torch.bfloat16, device=device, generator=gen)
    kv_bf16 = torch.randn((total_kv, NUM_KV_HEADS, QK_HEAD_DIM), dtype=torch.bfloat16, device=device, generator=gen)
    if stress is not None:
        q, kv_bf16 = _stressed(stress, q, kv_bf16, lens, qseqlen, gen)
    kv_data = {
        "bf16": kv_bf16,
        "fp8": quantize_fp8(kv_bf16),
        "mxfp4": quantize_mxfp4(kv_bf16),
    }
    qo_indptr = torch.arange(batchsize + 1, dtype=torch.int32, device=device) * qseqlen
    kv_indptr = torch.tensor([0] + lens, dtype=torch.int64).cumsum(0).to(torch.int32).to(device)
    config = {
        "batch_size": batchsize,
        "num_heads": NUM_HEADS,
        "num_kv_heads": NUM_KV_HEADS,
        "qk_head_dim": QK_HEAD_DIM,
        "kv_lora_rank": KV_LORA_RANK,
        "qk_rope_head_dim": QK_ROPE_HEAD_DIM,
        "v_head_dim": V_HEAD_DIM,
        "q_seq_len": qseqlen,
        "kv_seq_len": kvseqlen,
        "sm_scale": SM_SCALE,
    }
    return q, kv_data, qo_indptr, kv_indptr, config


# Stress data: structured inputs beside the official iid randn (which near-uniform attention forgives).
#   peaked: in every sequence PEAK_TOKENS keys are shifted along its queries' mean, so they take most of the attention
#           (a kernel that skips KV tokens misses them);
#   heavy:  KV values with heavy tails (randn times a log-normal factor): the fp8 scale is set by rare outliers;
#   qscale: Q scaled by Q_GAIN, far from randn's amax (a hard-coded Q amax or fp8 scale saturates).
STRESS_KINDS = ("peaked", "heavy", "qscale")
PEAK_TOKENS = 4
PEAK_LOGIT = 10.0  # the peak keys' score above the mean, in softmax units
HEAVY_SIGMA = 0.5
Q_GAIN = 3.0


def _stressed(kind: str, q: torch.Tensor, kv: torch.Tensor, lens: list[int], qseqlen: int, gen: torch.Generator):
    if kind not in STRESS_KINDS:
        raise ValueError(f"unknown stress {kind!r}: use one of {', '.join(STRESS_KINDS)}")
    if kind == "qscale":
        return (q.float() * Q_GAIN).to(torch.bfloat16), kv
    if kind == "heavy":
        factor = torch.exp(HEAVY_SIGMA * torch.randn(kv.shape, device=kv.device, generator=gen))
        return q, (kv.float() * factor).to(torch.bfloat16)
    kv = kv.clone()
    start = 0
    for b, length in enumerate(lens):
        direction = q[b * qseqlen:(b + 1) * qseqlen].float().mean(dim=(0, 1))
        direction = direction / direction.norm().clamp(min=1e-6)
        # score of a head = q_h . key * SM_SCALE ~ |mean q| * gain * SM_SCALE: pick the gain for PEAK_LOGIT
        gain = PEAK_LOGIT / (SM_SCALE * q[b * qseqlen:(b + 1) * qseqlen].float().mean(dim=(0, 1)).norm().clamp(min=1e-6))
        picks = torch.randint(0, length, (min(PEAK_TOKENS, length),), device=kv.device, generator=gen)
        rows = start + picks  # each peak keeps its own randn values (distinct V), shifted along the queries
        kv[rows, 0] = (kv[rows, 0].float() + direction * gain).to(torch.bfloat16)
        start += length
    return q, kv


# ---------------------------------------------------------------------------
# Reference kernel
# ---------------------------------------------------------------------------

def _aiter_available(device: torch.device) -> bool:
    if device.type != "cuda" or not torch.version.hip:
        return False
    try:
        import aiter.mla  # noqa: F401
    except Exception:
        return False
    return not getattr(sys.modules["aiter"], "__standin__", False)  # a harness's stand-in is no reference


def _aiter_a8w8_decode(q8, q_scale, kv8, kv_scale, qo_indptr, kv_indptr, config) -> torch.Tensor:
    """aiter's persistent a8w8 mla_decode_fwd, called the way the official reference calls it."""
    from aiter import get_mla_metadata_info_v1, get_mla_metadata_v1
    from aiter.mla import mla_decode_fwd

    device = q8.device
    batch, heads, kv_heads = config["batch_size"], config["num_heads"], config["num_kv_heads"]
    max_q_len = config["q_seq_len"]
    kv_last_page_len = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
    info = get_mla_metadata_info_v1(
        batch, max_q_len, heads, q8.dtype, kv8.dtype,
        is_sparse=False, fast_mode=False, num_kv_splits=NUM_KV_SPLITS, intra_batch_mode=True,
    )
    work = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in info]
    work_meta, work_indptr, work_info, reduce_indptr, reduce_final, reduce_partial = work
    get_mla_metadata_v1(
        qo_indptr, kv_indptr, kv_last_page_len, heads // kv_heads, kv_heads, True,
        work_meta, work_info, work_indptr, reduce_indptr, reduce_final, reduce_partial,
        page_size=1, kv_granularity=16, max_seqlen_qo=max_q_len, uni_seqlen_qo=max_q_len,
        fast_mode=False, max_split_per_batch=NUM_KV_SPLITS, intra_batch_mode=True,
        dtype_q=q8.dtype, dtype_kv=kv8.dtype,
    )
    out = torch.empty((q8.shape[0], heads, config["v_head_dim"]), dtype=torch.bfloat16, device=device)
    kv_indices = torch.arange(kv8.shape[0], dtype=torch.int32, device=device)
    mla_decode_fwd(
        q8.view(-1, heads, config["qk_head_dim"]), kv8.view(kv8.shape[0], 1, kv_heads, kv8.shape[-1]), out,
        qo_indptr, kv_indptr, kv_indices, kv_last_page_len, max_q_len,
        page_size=1, nhead_kv=kv_heads, sm_scale=config["sm_scale"], logit_cap=0.0,
        num_kv_splits=NUM_KV_SPLITS, q_scale=q_scale, kv_scale=kv_scale, intra_batch_mode=True,
        work_meta_data=work_meta, work_indptr=work_indptr, work_info_set=work_info,
        reduce_indptr=reduce_indptr, reduce_final_map=reduce_final, reduce_partial_map=reduce_partial,
    )
    return out


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sm_scale: float) -> torch.Tensor:
    """Batched attention in float32: q (B, Sq*H, D), k (B, Skv, D), v (B, Skv, Dv) -> (B, Sq*H, Dv)."""
    scores = torch.bmm(q, k.transpose(1, 2)) * sm_scale
    return torch.bmm(torch.softmax(scores, dim=-1), v)


def torch_a8w8_decode(q8, q_scale, kv8, kv_scale, qo_indptr, kv_indptr, sm_scale) -> torch.Tensor:
    """The a8w8 math in torch: dequantized fp8 Q and KV, float32 scores and softmax, bf16 output.

    Works one chunk of consecutive sequences at a time so the float32 KV stays under REFERENCE_CHUNK_BYTES;
    sequences of equal length within a chunk go through one bmm, uneven ones one by one.
    """
    heads, dim = q8.shape[1], q8.shape[2]
    v_dim = V_HEAD_DIM
    q_starts, kv_starts = qo_indptr.tolist(), kv_indptr.tolist()
    out = torch.empty((q8.shape[0], heads, v_dim), dtype=torch.bfloat16, device=q8.device)
    batch = len(q_starts) - 1
    b = 0
    while b < batch:
        # Grow the chunk while its float32 KV fits the budget.
        end, kv_bytes = b, 0
        while end < batch:
            seq_bytes = (kv_starts[end + 1] - kv_starts[end]) * dim * 4
            if end > b and kv_bytes + seq_bytes > REFERENCE_CHUNK_BYTES:
                break
            kv_bytes += seq_bytes
            end += 1
        q_lens = {q_starts[i + 1] - q_starts[i] for i in range(b, end)}
        kv_lens = {kv_starts[i + 1] - kv_starts[i] for i in range(b, end)}
        if len(q_lens) == 1 and len(kv_lens) == 1:
            groups = [(b, end)]
        else:
            groups = [(i, i + 1) for i in range(b, end)]
        for g0, g1 in groups:
            n, q_len = g1 - g0, q_starts[g0 + 1] - q_starts[g0]
            kv_len = kv_starts[g0 + 1] - kv_starts[g0]
            if q_len == 0:
                continue
            qf = dequantize_fp8(q8[q_starts[g0]:q_starts[g1]], q_scale).reshape(n, q_len * heads, dim)
            kvf = dequantize_fp8(kv8[kv_starts[g0]:kv_starts[g1]], kv_scale).reshape(n, kv_len, dim)
            o = _attend(qf, kvf, kvf[..., :v_dim], sm_scale)
            out[q_starts[g0]:q_starts[g1]] = o.reshape(n * q_len, heads, v_dim).to(torch.bfloat16)
        b = end
    return out


@torch.no_grad()
def ref_kernel(data: input_t) -> output_t:
    """a8w8 MLA decode: Q quantized per-tensor to fp8 on the fly, fp8 KV, bf16 output."""
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    q8, q_scale = quantize_fp8(q, dtype=kv8.dtype)
    if _aiter_available(q.device):
        return _aiter_a8w8_decode(q8, q_scale, kv8, kv_scale, qo_indptr, kv_indptr, config)
    return torch_a8w8_decode(q8, q_scale, kv8.squeeze(1), kv_scale, qo_indptr, kv_indptr, config["sm_scale"])


# ---------------------------------------------------------------------------
# Correctness: the official utils.match_reference semantics
# ---------------------------------------------------------------------------

def nonfinite_warning(output: torch.Tensor) -> str:
    """'' when every element is finite, else a loud line counting NaN and inf."""
    if not output.is_floating_point():
        return ""
    nans = int(torch.isnan(output).sum())
    infs = int(torch.isinf(output).sum())
    if nans == 0 and infs == 0:
        return ""
    return f"WARNING: output holds {nans} NaN and {infs} inf of {output.numel()} elements"


def _mismatch_report(output: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float, max_print: int = 5):
    """(ok, lines) like the official verbose_allclose: tolerance, NaN and +/-inf must agree."""
    diff = (output.to(torch.float32) - expected.to(torch.float32)).abs()
    bad = diff > atol + rtol * expected.to(torch.float32).abs()
    bad |= torch.isnan(output) ^ torch.isnan(expected)
    bad |= torch.isposinf(output) ^ torch.isposinf(expected)
    bad |= torch.isneginf(output) ^ torch.isneginf(expected)
    count = int(bad.count_nonzero())
    if count == 0:
        return True, [f"Maximum error: {diff.max()}"]
    lines = [f"Number of mismatched elements: {count}"]
    for index in torch.nonzero(bad)[:max_print]:
        i = tuple(index.tolist())
        lines.append(f"ERROR at {i}: {output[i]} {expected[i]}")
    if count > max_print:
        lines.append(f"... and {count - max_print} more mismatched elements.")
    return False, lines


@torch.no_grad()
def check_implementation(data: input_t, output: output_t, rtol: float = RTOL, atol: float = ATOL) -> tuple[bool, str]:
    """(ok, message) with the official verdict: element-wise tolerance, else the MLA 5% rule; NaN/inf warned loudly."""
    expected = ref_kernel(data)
    if not isinstance(output, torch.Tensor):
        return False, f"output is a {type(output).__name__}, not a tensor"
    if output.shape != expected.shape:
        return False, f"SIZE MISMATCH: output {tuple(output.shape)}, expected {tuple(expected.shape)}"
    if output.device != expected.device:
        return False, f"output is on {output.device}, expected {expected.device}"
    warning = nonfinite_warning(output)
    if warning:
        print(warning, file=sys.stderr)
    ok, lines = _mismatch_report(output, expected, rtol, atol)
    if not ok:
        not_close = ~torch.isclose(output.to(expected.dtype), expected, rtol=rtol, atol=atol)
        ratio = float(not_close.sum()) / output.numel()
        if ratio <= MISMATCH_RATIO_LIMIT:
            ok, lines = True, [
                f"warning: mismatch_ratio={ratio:.6f} (<= tol_err_ratio={MISMATCH_RATIO_LIMIT}) "
                f"with rtol={rtol}, atol={atol}"
            ]
    if output.dtype != expected.dtype:
        lines.append(f"warning: output dtype is {output.dtype}, the task expects {expected.dtype}")
    if warning:
        lines.insert(0, warning)
    return ok, "\n".join(lines)
