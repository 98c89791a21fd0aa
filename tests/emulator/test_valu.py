"""VALU families against independent computations: Python's exact fractions and ints, torch's
float8/bfloat16 conversions, numpy lane shuffles."""
from fractions import Fraction

import numpy as np
import torch

from .snippets import as_f32, snippet

RNG = np.random.default_rng(7)


def exact_fma(a: float, b: float, c: float) -> np.float32:
    """a*b+c rounded once to float32, through exact fractions (ties to even)."""
    value = Fraction(a) * Fraction(b) + Fraction(c)
    below = np.float32(float(value))
    candidates = [below, np.nextafter(below, np.float32(np.inf)), np.nextafter(below, np.float32(-np.inf))]
    best = min(candidates, key=lambda x: (abs(Fraction(float(x)) - value),
                                          int(np.float32(x).view(np.uint32)) & 1))
    return np.float32(best)


def test_fma_f32_is_rounded_once():
    a = (1 + RNG.integers(0, 2**23, 64) / 2**23).astype(np.float32)
    b = (1 + RNG.integers(0, 2**23, 64) / 2**23).astype(np.float32)
    c = -(a.astype(np.float64) * b).astype(np.float32)  # the product's rounding error is what remains
    c[:8] = np.float32(1e-30)
    out = as_f32(snippet("  v_fma_f32 v20, v10, v11, v12", [a, b, c])[0])
    expected = np.array([exact_fma(float(x), float(y), float(z)) for x, y, z in zip(a, b, c)], np.float32)
    assert np.array_equal(out.view(np.uint32), expected.view(np.uint32))


def test_carry_chain_and_mad_u64_u32_match_python_ints():
    a, b, c, d = (RNG.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32) for _ in range(4))
    body = """  v_add_co_u32 v20, vcc, v10, v11
  v_addc_co_u32 v21, vcc, v12, v13, vcc
  v_mad_u64_u32 v[22:23], s[6:7], v10, v11, v[12:13]"""
    out = snippet(body, [a, b, c, d], outputs=4).astype(np.uint64)
    for lane in range(64):
        total = (int(a[lane]) | int(c[lane]) << 32) + (int(b[lane]) | int(d[lane]) << 32)
        assert int(out[0, lane]) | int(out[1, lane]) << 32 == total & (2**64 - 1)
        mad = int(a[lane]) * int(b[lane]) + (int(c[lane]) | int(d[lane]) << 32)
        assert int(out[2, lane]) | int(out[3, lane]) << 32 == mad & (2**64 - 1)


def test_bit_field_ops_match_python():
    x, y = (RNG.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    body = """  v_bfe_u32 v20, v10, 5, 11
  v_bfe_i32 v21, v10, 3, 7
  v_alignbit_b32 v22, v10, v11, 9
  s_mov_b32 s10, 0x0c050a01
  v_perm_b32 v23, v10, v11, s10
  v_lshl_add_u32 v24, v10, 3, v11"""
    out = snippet(body, [x, y], outputs=5)
    for lane in range(64):
        a, b = int(x[lane]), int(y[lane])
        assert out[0, lane] == a >> 5 & 0x7FF
        field = a >> 3 & 0x7F
        assert out[1, lane] == (field - 0x80 if field & 0x40 else field) & 0xFFFFFFFF
        assert out[2, lane] == ((a << 32 | b) >> 9) & 0xFFFFFFFF
        pool = (a << 32 | b).to_bytes(8, "little")
        sign = 0xFF if a & 0x8000 else 0x00  # selector 10: the sign of S0[15]
        assert out[3, lane] == int.from_bytes(bytes([pool[1], sign, pool[5], 0x00]), "little")
        assert out[4, lane] == ((a << 3) + b) & 0xFFFFFFFF


def test_fp8_pack_is_ocp_e4m3_and_keeps_the_other_half():
    a = (RNG.standard_normal(64) * 50).astype(np.float32)
    b = (RNG.standard_normal(64) * 0.01).astype(np.float32)
    old = np.full(64, 0xA5A5A5A5, np.uint32)
    body = """  v_mov_b32 v20, v12
  v_cvt_pk_fp8_f32 v20, v10, v11 op_sel:[0,0,1]
  v_mov_b32 v21, v12
  v_cvt_pk_fp8_f32 v21, v10, v11
  v_cvt_pk_bf8_f32 v22, v10, v11"""
    out = snippet(body, [a, b, old], outputs=3)
    fp8 = lambda x: torch.tensor(x).to(torch.float8_e4m3fn).view(torch.uint8).numpy().astype(np.uint32)
    bf8 = lambda x: torch.tensor(x).to(torch.float8_e5m2).view(torch.uint8).numpy().astype(np.uint32)
    pair = fp8(a) | fp8(b) << 8
    assert np.array_equal(out[0], (pair << 16) | 0xA5A5)
    assert np.array_equal(out[1], pair | 0xA5A50000)
    assert np.array_equal(out[2] & 0xFFFF, bf8(a) | bf8(b) << 8)


def test_fp8_overflow_is_nan_and_rounding_below_the_midpoint_keeps_the_max():
    # gfx950's assembler takes no clamp here: HIP saturates with v_med3 before the conversion.
    # Overflow to NaN is our reading: AMD's pseudocode calls f32_to_fp8 without defining it.
    a = np.array([500.0, -1000.0, 448.0, 463.0] * 16, np.float32)
    out = snippet("  v_cvt_pk_fp8_f32 v20, v10, v10", [a]) & 0xFF
    assert out[0, :4].tolist() == [0x7F, 0xFF, 0x7E, 0x7E]


def test_fp8_and_bf16_decodes_match_torch():
    codes = np.arange(256, dtype=np.uint32)
    words = (codes[:64] | codes[64:128] << 8 | codes[128:192] << 16 | codes[192:] << 24).astype(np.uint32)
    x = (RNG.standard_normal(64) * 3).astype(np.float32)
    body = """  v_cvt_f32_fp8_sdwa v20, v10 src0_sel:BYTE_0
  v_cvt_f32_fp8_sdwa v21, v10 src0_sel:BYTE_1
  v_cvt_f32_fp8_sdwa v22, v10 src0_sel:BYTE_2
  v_cvt_f32_fp8_sdwa v23, v10 src0_sel:BYTE_3
  v_cvt_pk_bf16_f32 v24, v11, v11"""
    out = snippet(body, [words, x], outputs=5)
    expected = torch.tensor(codes.astype(np.uint8)).view(torch.float8_e4m3fn).float().numpy()
    got = as_f32(out[:4].reshape(-1))
    assert np.array_equal(got, expected, equal_nan=True)
    bf16 = torch.tensor(x).to(torch.bfloat16).view(torch.int16).numpy().astype(np.uint16).astype(np.uint32)
    assert np.array_equal(out[4], bf16 | bf16 << 16)


def test_dpp_and_sdwa_lane_selects():
    x = np.arange(64, dtype=np.uint32) * 3 + 1
    body = """  v_mov_b32 v20, 0
  v_mov_b32 v21, 0
  v_mov_b32_dpp v20, v10 row_shr:1 row_mask:0xf bank_mask:0xf
  v_mov_b32_dpp v21, v10 quad_perm:[3,2,1,0] row_mask:0xf bank_mask:0xf
  v_mov_b32 v22, 7
  v_add_u32_dpp v22, v10, v10 row_shr:2 row_mask:0xf bank_mask:0xf bound_ctrl:1
  v_add_u32_sdwa v23, v10, v10 dst_sel:WORD_1 dst_unused:UNUSED_PAD src0_sel:BYTE_0 src1_sel:BYTE_1"""
    out = snippet(body, [x], outputs=4)
    lane = np.arange(64)
    shifted = np.where(lane % 16 >= 1, x[np.maximum(lane - 1, 0)], 0)
    assert np.array_equal(out[0], shifted)
    assert np.array_equal(out[1], x[lane - lane % 4 + 3 - lane % 4])
    assert np.array_equal(out[2], np.where(lane % 16 >= 2, x[np.maximum(lane - 2, 0)], 0) + x)
    assert np.array_equal(out[3], (((x & 0xFF) + (x >> 8 & 0xFF)) & 0xFFFF) << 16)


def test_compare_select_and_transcendentals():
    a = RNG.standard_normal(64).astype(np.float32)
    b = RNG.standard_normal(64).astype(np.float32)
    body = """  v_cmp_lt_f32 vcc, v10, v11
  v_cndmask_b32 v20, v11, v10, vcc
  v_exp_f32 v21, v10
  v_rcp_f32 v22, v11
  s_movk_i32 s10, 0x60
  v_cmp_class_f32 s[8:9], v10, s10
  v_cndmask_b32 v23, 0, 1, s[8:9]"""
    out = snippet(body, [a, b], outputs=4)
    assert np.array_equal(as_f32(out[0]), np.minimum(a, b))
    assert np.allclose(as_f32(out[1]), np.exp2(a.astype(np.float64)), rtol=2**-22)
    assert np.allclose(as_f32(out[2]), 1 / b.astype(np.float64), rtol=2**-22)
    assert np.array_equal(out[3], (a == 0).astype(np.uint32))


def test_permlane_swaps_and_agpr_moves_follow_the_isa_pseudocode():
    x = np.arange(64, dtype=np.uint32) + 100
    y = np.arange(64, dtype=np.uint32) + 200
    body = """  v_mov_b32 v20, v10
  v_mov_b32 v21, v11
  v_permlane16_swap_b32 v20, v21
  v_mov_b32 v22, v10
  v_mov_b32 v23, v11
  v_permlane32_swap_b32 v22, v23
  v_accvgpr_write_b32 a3, v10
  v_accvgpr_mov_b32 a4, a3
  v_accvgpr_read_b32 v24, a4"""
    out = snippet(body, [x, y], outputs=5)
    dst, src = x.copy(), y.copy()
    for start in (0, 32):
        for lane in range(start, start + 16):
            src[lane], dst[lane + 16] = dst[lane + 16], src[lane]
    assert np.array_equal(out[0], dst) and np.array_equal(out[1], src)
    dst, src = x.copy(), y.copy()
    src[:32], dst[32:] = x[32:], y[:32]
    assert np.array_equal(out[2], dst) and np.array_equal(out[3], src)
    assert np.array_equal(out[4], x)


def test_scaled_fp8_decode_multiplies_by_the_exponent_of_the_scale():
    codes = RNG.integers(0, 256, 64).astype(np.uint32)
    codes[(codes & 0x7F) == 0x7F] = 0x10  # no NaN codes
    words = codes | ((codes * 7) & 0xFF) << 16
    scale = np.full(64, 4.0, np.float32)
    out = snippet("  v_cvt_scalef32_pk_f32_fp8 v[20:21], v10, v11", [words, scale], outputs=2)
    decode = lambda c: torch.tensor(c.astype(np.uint8)).view(torch.float8_e4m3fn).float().numpy()
    assert np.array_equal(as_f32(out[0]), decode(codes) * 4)
    assert np.array_equal(as_f32(out[1]), decode(np.zeros(64, np.uint32)) * 4)


def test_packed_f16_conversion_rounds_to_nearest_even():
    a, b = RNG.standard_normal(64).astype(np.float32) * 300, RNG.standard_normal(64).astype(np.float32) / 300
    out = snippet("  v_cvt_pk_f16_f32 v20, v10, v11", [a, b])[0]
    halves = lambda x: torch.tensor(x).half().view(torch.int16).numpy().astype(np.uint16).astype(np.uint32)
    assert np.array_equal(out, halves(a) | halves(b) << 16)


def test_scaled_fp8_and_fp4_decode_to_packed_half_types():
    """Codes picked by op_sel (the high half word for fp8, byte 2 for fp4), times 2^(exponent of S1), rounded."""
    codes = RNG.integers(0, 256, 64).astype(np.uint32)
    codes[(codes & 0x7F) == 0x7F] = 0x10  # no NaN codes
    words = (codes << 16) | (codes << 24) | 0x1234
    scale = np.full(64, 2.0 ** -3, np.float32)
    out = snippet("  v_cvt_scalef32_pk_f16_fp8 v20, v10, v11 op_sel:[1,0,0]\n"
                  "  v_cvt_scalef32_pk_bf16_fp4 v21, v10, v11 op_sel:[0,1,0]", [words, scale], outputs=2)
    fp8 = torch.tensor(codes.astype(np.uint8)).view(torch.float8_e4m3fn).float() / 8
    halves = lambda x, kind: x.to(kind).view(torch.int16).numpy().astype(np.uint16).astype(np.uint32)
    assert np.array_equal(out[0], halves(fp8, torch.float16) * 0x10001)
    e2m1 = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
    nibble = lambda shift: torch.tensor((codes >> shift & 0xF).astype(np.int64))
    low, high = e2m1[nibble(0)] / 8, e2m1[nibble(4)] / 8
    assert np.array_equal(out[1], halves(low, torch.bfloat16) | halves(high, torch.bfloat16) << 16)
