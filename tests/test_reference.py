"""reference.py: bit-exact quantizers, the torch a8w8 reference, the official correctness check."""
import bisect
import struct

import pytest
import torch

import reference as ref

# Its module-wide fixtures run once: make test gives the whole file to one xdist worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("reference")

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def mxfp4_codes(values, rounding=ref.MXFP4_ROUNDING):
    """Quantize one row of 32*k bf16-exact values; return (list of 4-bit codes, list of its block scale bytes)."""
    x = torch.tensor(values, dtype=torch.bfloat16).reshape(1, 1, -1)
    packed, scales = ref.quantize_mxfp4(x, rounding=rounding)
    raw = packed.view(torch.uint8).reshape(-1).tolist()
    codes = []
    for byte in raw:
        codes += [byte & 0xF, byte >> 4]
    return codes, scales.view(torch.uint8)[0, : len(values) // 32].tolist()


def block(*head):
    """A 32-element block starting with the given values, zero-filled."""
    return list(head) + [0.0] * (32 - len(head))


# ---------------------------------------------------------------------------
# MXFP4 on hand-worked vectors
# ---------------------------------------------------------------------------

def test_all_zero_block_has_zero_codes_and_scale_byte_zero():
    codes, scales = mxfp4_codes([0.0] * 32)
    assert codes == [0] * 32
    assert scales == [0]  # unbiased -127 (log2 of 0 clamped) + 127


TIES = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)


def test_ties_round_away_from_zero():
    # amax 6.0 = 1.5 * 2^2 (mantissa 0.5 < 0.75, no round-up) -> scale 2^(2-2) = 1: values are unscaled.
    codes, scales = mxfp4_codes(block(6.0, *TIES, *(-t for t in TIES)))
    assert scales == [127]
    # 0.25->0.5, 0.75->1, 1.25->1.5, 1.75->2, 2.5->3, 3.5->4, 5->6: always the larger magnitude
    assert codes[:8] == [7, 1, 2, 3, 4, 5, 6, 7]
    assert codes[8:15] == [8 | c for c in (1, 2, 3, 4, 5, 6, 7)]


def test_ties_round_half_to_even_as_later_aiter_does():
    codes, scales = mxfp4_codes(block(6.0, *TIES, *(-t for t in TIES)), rounding="even")
    assert scales == [127]
    assert codes[:8] == [7, 0, 2, 2, 4, 4, 6, 6]  # 0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4
    assert codes[8:15] == [8 | c for c in (0, 2, 2, 4, 4, 6, 6)]


def test_official_rounding_is_away_and_unknown_rules_are_refused():
    assert ref.MXFP4_ROUNDING == "away"
    with pytest.raises(ValueError, match="unknown E2M1 rounding"):
        ref.quantize_mxfp4(torch.zeros(1, 32), rounding="nearest")


def test_just_off_ties_round_to_nearest():
    codes, _ = mxfp4_codes(block(6.0, 0.2578125, 0.7421875, 1.2578125, 5.0625))
    assert codes[:5] == [7, 1, 1, 3, 7]


def test_saturates_at_six():
    # amax 6.5: mantissa 0.625 < 0.75 -> scale 1, so 6.5 is above the largest E2M1 value and saturates.
    codes, scales = mxfp4_codes(block(6.5, -6.5))
    assert scales == [127]
    assert codes[:2] == [7, 0xF]


def test_half_is_the_subnormal_code():
    codes, _ = mxfp4_codes(block(4.0, 0.5, 0.375, -0.5))
    assert codes[:4] == [6, 1, 1, 0x9]


def test_negative_zero_and_negative_underflow_keep_the_sign_bit():
    codes, _ = mxfp4_codes(block(4.0, -0.0, -0.125, 0.125))
    assert codes[:4] == [6, 0x8, 0x8, 0x0]


def test_amax_mantissa_below_and_at_three_quarters():
    # 1.7421875 = 1.1011111b: mantissa < 0.75, no round-up: exponent floor(log2 1) - 2 = -2 -> byte 125.
    codes, scales = mxfp4_codes(block(1.7421875))
    assert scales == [125]
    assert codes[0] == 7  # 1.7421875 * 4 = 6.97 saturates to 6
    # 1.75 = 1.11b: mantissa 0.75 rounds up to 2.0: exponent 1 - 2 = -1 -> byte 126.
    codes, scales = mxfp4_codes(block(1.75))
    assert scales == [126]
    assert codes[0] == 6  # 1.75 * 2 = 3.5: a tie, away from zero to 4.0
    codes, scales = mxfp4_codes(block(1.7578125))
    assert scales == [126]


def test_nibble_order_low_is_even_index():
    x = torch.tensor(block(4.0, 0.5, 1.0, 3.0), dtype=torch.bfloat16).reshape(1, 1, 32)
    packed, _ = ref.quantize_mxfp4(x)
    raw = packed.view(torch.uint8).reshape(-1).tolist()
    assert raw[0] == 0x6 | (0x1 << 4)
    assert raw[1] == 0x2 | (0x5 << 4)


def test_scale_bytes_one_per_block_of_32():
    values = block(4.0) + block(0.5) + block(64.0)
    _, scales = mxfp4_codes(values)
    assert scales == [127, 127 - 3, 127 + 4]


def test_e8m0_decode_special_bytes():
    decoded = ref.e8m0_decode(torch.tensor([0, 127, 254, 255], dtype=torch.uint8)).tolist()
    assert decoded[0] == 2.0 ** -127
    assert decoded[1] == 1.0
    assert decoded[2] == 2.0 ** 127
    assert decoded[3] != decoded[3]  # NaN


# ---------------------------------------------------------------------------
# MXFP4 scale layout: aiter's (cdiv(rows, 256) * 256, 24), pad rows never written
# ---------------------------------------------------------------------------

def test_scale_tensor_has_aiters_padded_layout():
    x = torch.randn(300, 1, 576, dtype=torch.bfloat16)
    packed, scales = ref.quantize_mxfp4(x)
    assert packed.shape == (300, 1, 288)
    assert scales.shape == (512, 24) and scales.stride() == (24, 1)
    raw = scales.view(torch.uint8)
    assert (raw[:300, 18:] == 0).all()  # written by aiter as empty blocks: scale -127 wraps to 0x00
    assert ((raw[:300, :18] > 100) & (raw[:300, :18] < 140)).all()  # randn blocks: scales near 2^0
    assert ref.quantize_mxfp4(torch.randn(256, 576))[1].shape == (256, 24)  # no pad rows
    assert ref.mxfp4_scale_shape(1, 3) == (256, 8)  # columns round up to a multiple of 8 in general


def test_pad_rows_change_between_calls_while_the_meaningful_bytes_do_not():
    first = ref.generate_input(3, 1, 100, seed=7, device="cpu")
    second = ref.generate_input(3, 1, 100, seed=7, device="cpu")
    (packed_a, scales_a), (packed_b, scales_b) = first[1]["mxfp4"], second[1]["mxfp4"]
    a, b = scales_a.view(torch.uint8), scales_b.view(torch.uint8)
    assert a.shape == b.shape == (512, 24)
    assert torch.equal(packed_a.view(torch.uint8), packed_b.view(torch.uint8))
    assert torch.equal(a[:300], b[:300])  # all 24 columns of the first M rows
    assert not torch.equal(a[300:], b[300:])  # garbage, fresh every call


def test_dequantize_and_ref_kernel_ignore_pad_bytes():
    data = ref.generate_input(2, 1, 70, seed=3, device="cpu")
    packed, scales = data[1]["mxfp4"]
    rows = 140
    expected = ref.dequantize_mxfp4(packed, scales)
    for fill in (0x00, 0x7F, 0xFF):
        poisoned = scales.view(torch.uint8).clone()
        poisoned[rows:] = fill
        poisoned[:, 18:] = fill
        assert torch.equal(ref.dequantize_mxfp4(packed, poisoned), expected)
    compact = scales.view(torch.uint8)[:rows, :18].contiguous()  # row stride 18 instead of 24
    assert torch.equal(ref.dequantize_mxfp4(packed, compact), expected)
    reference_out = ref.ref_kernel(data)
    poisoned = scales.view(torch.uint8).clone()
    poisoned[rows:] = 0xFF
    kv = dict(data[1], mxfp4=(packed, poisoned))
    assert torch.equal(ref.ref_kernel((data[0], kv, *data[2:])), reference_out)


# ---------------------------------------------------------------------------
# MXFP4 against a plain per-element implementation
# ---------------------------------------------------------------------------

def _f32_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def plain_mxfp4_block(values: list[float], rounding: str = "away") -> tuple[list[int], int]:
    """Per-element MXFP4 of one block: exponent from amax's bits, nearest E2M1 value, ties away or to even."""
    amax = max(abs(v) for v in values)
    rounded = (_f32_bits(amax) + 0x200000) & 0x7F800000
    exponent = -127 if rounded == 0 else max(-127, min(127, (rounded >> 23) - 127 - 2))
    codes = []
    for v in values:
        a = min(abs(v) * 2.0 ** -exponent, 6.0)
        i = bisect.bisect_left(E2M1, a)
        if i == 0:
            code = 0
        else:
            lo, hi = E2M1[i - 1], E2M1[min(i, 7)]
            if a - lo < hi - a:
                code = i - 1
            elif a - lo > hi - a:
                code = i
            elif rounding == "away":
                code = i
            else:
                code = i - 1 if (i - 1) % 2 == 0 else i
        sign = 8 if struct.pack("<f", v)[3] & 0x80 else 0
        codes.append(code | sign)
    return codes, exponent + 127


@pytest.mark.parametrize("rounding, values", [("away", 1_000_000), ("even", 50_000)])
def test_mxfp4_matches_plain_implementation(rounding, values):
    gen = torch.Generator().manual_seed(2026)
    x = torch.randn(values // 576 + 1, 1, 576, generator=gen, dtype=torch.bfloat16)
    x[::7] *= 37.0  # spread the block exponents
    x[3, 0, :32] = 0.0  # an all-zero block
    packed, scales = ref.quantize_mxfp4(x, rounding=rounding)
    raw = packed.view(torch.uint8).reshape(-1).tolist()
    got_codes = [c for byte in raw for c in (byte & 0xF, byte >> 4)]
    got_scales = scales.view(torch.uint8)[: x.shape[0], :18].reshape(-1).tolist()
    flat = x.to(torch.float32).reshape(-1).tolist()
    assert len(flat) >= values
    for b in range(len(flat) // 32):
        codes, scale = plain_mxfp4_block(flat[32 * b: 32 * b + 32], rounding)
        assert got_scales[b] == scale, f"block {b}"
        assert got_codes[32 * b: 32 * b + 32] == codes, f"block {b}"


def test_mxfp4_roundtrip_error_is_bounded():
    x = torch.randn(64, 1, 576, dtype=torch.bfloat16)
    back = ref.dequantize_mxfp4(*ref.quantize_mxfp4(x))
    assert back.shape == x.shape
    # E2M1 keeps 1 mantissa bit: relative error of the block is well under 25%.
    rel = (back - x.float()).norm() / x.float().norm()
    assert 0.05 < rel < 0.25


# ---------------------------------------------------------------------------
# fp8
# ---------------------------------------------------------------------------

def test_fp8_per_tensor_bits():
    x = torch.tensor([448.0, -224.0, 1.0, 0.0], dtype=torch.bfloat16)
    x8, scale = ref.quantize_fp8(x, dtype=torch.float8_e4m3fn)
    assert scale.shape == (1,) and scale.dtype == torch.float32 and scale.item() == 1.0
    assert x8.view(torch.uint8).tolist() == [0x7E, 0xF6, 0x38, 0x00]


def test_fp8_scale_is_amax_over_fp8_max_and_clamps_tiny_amax():
    x = torch.tensor([2.0, -8.0], dtype=torch.bfloat16)
    x8, scale = ref.quantize_fp8(x, dtype=torch.float8_e4m3fn)
    # As in the official code, amax / fp8_max is computed in the input's dtype (bf16), then widened.
    assert scale.item() == torch.tensor(8.0 / 448.0, dtype=torch.bfloat16).item()
    assert x8.view(torch.uint8).tolist()[1] == 0xFE  # -448
    zeros8, zero_scale = ref.quantize_fp8(torch.zeros(4, dtype=torch.bfloat16), dtype=torch.float8_e4m3fn)
    assert zero_scale.item() == torch.tensor(1e-12, dtype=torch.bfloat16).div(448.0).item()
    assert zeros8.view(torch.uint8).tolist() == [0, 0, 0, 0]


def test_fp8_fnuz_flavour_uses_its_own_max():
    x = torch.tensor([240.0, -1.0], dtype=torch.bfloat16)
    x8, scale = ref.quantize_fp8(x, dtype=torch.float8_e4m3fnuz)
    assert x8.dtype == torch.float8_e4m3fnuz and scale.item() == 1.0
    assert ref.dequantize_fp8(x8, scale).tolist() == [240.0, -1.0]


def test_fp8_flavour_by_platform_on_cpu_is_e4m3fn():
    assert ref.fp8_dtype("cpu") == torch.float8_e4m3fn


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------

def test_generate_input_structure_matches_the_official_one():
    q, kv, qo, kvp, config = ref.generate_input(3, 1, 40, seed=5, device="cpu")
    assert q.shape == (3, 16, 576) and q.dtype == torch.bfloat16
    assert kv["bf16"].shape == (120, 1, 576) and kv["bf16"].dtype == torch.bfloat16
    kv8, scale = kv["fp8"]
    assert kv8.shape == (120, 1, 576) and kv8.dtype == torch.float8_e4m3fn and scale.shape == (1,)
    fp4, e8m0 = kv["mxfp4"]
    assert fp4.shape == (120, 1, 288) and fp4.dtype == torch.float4_e2m1fn_x2
    assert e8m0.shape == (256, 24) and e8m0.dtype == torch.float8_e8m0fnu  # aiter's padded layout
    assert qo.tolist() == [0, 1, 2, 3] and kvp.tolist() == [0, 40, 80, 120]
    assert qo.dtype == kvp.dtype == torch.int32
    assert config["sm_scale"] == pytest.approx(576 ** -0.5) and config["kv_seq_len"] == 40
    assert set(config) == {"batch_size", "num_heads", "num_kv_heads", "qk_head_dim", "kv_lora_rank",
                           "qk_rope_head_dim", "v_head_dim", "q_seq_len", "kv_seq_len", "sm_scale"}


def test_generate_input_is_deterministic_per_seed():
    a = ref.generate_input(2, 1, 16, seed=7, device="cpu")
    b = ref.generate_input(2, 1, 16, seed=7, device="cpu")
    c = ref.generate_input(2, 1, 16, seed=8, device="cpu")
    assert torch.equal(a[0], b[0]) and torch.equal(a[1]["bf16"], b[1]["bf16"])
    assert not torch.equal(a[0], c[0])


def test_uneven_segments_and_bad_lengths():
    q, kv, _, kvp, _ = ref.generate_input(3, 1, 0, seed=1, device="cpu", kv_seq_lens=[5, 33, 2])
    assert kvp.tolist() == [0, 5, 38, 40] and kv["bf16"].shape[0] == 40
    with pytest.raises(ValueError):
        ref.generate_input(2, 1, 8, seed=1, device="cpu", kv_seq_lens=[3])


def test_device_can_be_forced_by_environment(monkeypatch):
    monkeypatch.setenv(ref.DEVICE_ENV, "cpu")
    assert ref.default_device() == torch.device("cpu")
    assert ref.generate_input(1, 1, 8, seed=1)[0].device.type == "cpu"


# ---------------------------------------------------------------------------
# ref_kernel against float64 attention
# ---------------------------------------------------------------------------

def float64_attention(data):
    q, kv, qo, kvp, config = data
    kv8, kv_scale = kv["fp8"]
    q8, q_scale = ref.quantize_fp8(q, dtype=kv8.dtype)
    qd = (q8.to(torch.float64) * q_scale.double())
    kvd = (kv8.to(torch.float64) * kv_scale.double())[:, 0]
    out = torch.empty(q.shape[0], 16, 512, dtype=torch.float64)
    for b in range(len(qo) - 1):
        k = kvd[kvp[b]:kvp[b + 1]]
        for t in range(qo[b], qo[b + 1]):
            p = torch.softmax(qd[t] @ k.T * config["sm_scale"], dim=-1)
            out[t] = p @ k[:, :512]
    return out


@pytest.mark.parametrize("batch, qlen, kvlen, lens", [
    (2, 1, 64, None),
    (4, 1, 0, [1, 17, 300, 64]),
    (3, 2, 50, None),
])
def test_ref_kernel_matches_float64_attention(batch, qlen, kvlen, lens):
    data = ref.generate_input(batch, qlen, kvlen, seed=123, device="cpu", kv_seq_lens=lens)
    out = ref.ref_kernel(data)
    assert out.shape == (batch * qlen, 16, 512) and out.dtype == torch.bfloat16
    exact = float64_attention(data)
    rel = (out.double() - exact).norm() / exact.norm()
    assert rel < 4e-3


def test_ref_kernel_chunking_does_not_change_the_result(monkeypatch):
    data = ref.generate_input(5, 1, 96, seed=3, device="cpu")
    whole = ref.ref_kernel(data)
    monkeypatch.setattr(ref, "REFERENCE_CHUNK_BYTES", 96 * 576 * 4 * 2)  # two sequences per chunk
    assert torch.equal(ref.ref_kernel(data), whole)


# ---------------------------------------------------------------------------
# check_implementation
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def case():
    data = ref.generate_input(2, 1, 64, seed=99, device="cpu")
    return data, ref.ref_kernel(data)


def corrupt(out, share):
    bad = out.clone().reshape(-1)
    n = int(bad.numel() * share)
    idx = torch.randperm(bad.numel(), generator=torch.Generator().manual_seed(0))[:n]
    bad[idx] += 10.0
    return bad.reshape(out.shape)


def test_check_accepts_the_reference(case):
    data, out = case
    ok, message = ref.check_implementation(data, out.clone())
    assert ok and message.startswith("Maximum error")


def test_check_rejects_wrong_shape(case):
    data, out = case
    ok, message = ref.check_implementation(data, out[:, :, :256])
    assert not ok and "SIZE MISMATCH" in message


def test_check_rejects_all_nan(case):
    data, out = case
    ok, message = ref.check_implementation(data, torch.full_like(out, float("nan")))
    assert not ok and "NaN" in message and "mismatched" in message


def test_check_rejects_six_percent_off(case):
    data, out = case
    ok, message = ref.check_implementation(data, corrupt(out, 0.06))
    assert not ok and "Number of mismatched elements" in message


def test_check_accepts_four_percent_off_with_the_ratio_warning(case):
    data, out = case
    ok, message = ref.check_implementation(data, corrupt(out, 0.04))
    assert ok and "mismatch_ratio=0.0399" in message and "tol_err_ratio=0.05" in message


def test_check_warns_on_a_single_nan(case, capsys):
    data, out = case
    bad = out.clone()
    bad[0, 0, 0] = float("nan")
    ok, message = ref.check_implementation(data, bad)
    assert ok  # officially a few NaNs pass under the 5% rule
    assert "WARNING" in message and "1 NaN" in message
    assert "1 NaN" in capsys.readouterr().err
