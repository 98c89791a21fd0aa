"""The elementwise VALU opcodes: name -> (result type, source types, numpy function on typed lanes).
Written from the CDNA4 ISA guide's per-opcode pseudocode; the special forms are in valu_forms.py."""
import numpy as np

from .numerics import f32_to_bf16, fma_f32, fma_f64
from .wave import lanes64

U32 = np.uint32


def u(x):
    return np.asarray(x).astype(np.uint32)


def i64(x):
    return np.asarray(x).astype(np.int64)


def shift32(x):
    return u(x) & U32(31)


def bfe(value, offset, width, signed):
    offset, width = i64(offset) & 31, i64(width) & 31
    mask = (np.int64(1) << width) - 1
    field = (i64(u(value)) >> offset) & mask
    if signed:
        top = np.int64(1) << np.maximum(width - 1, 0)
        field = np.where(width == 0, 0, (field ^ top) - top)
    return np.where(width == 0, 0, field)


BYTE_SHIFTS = np.array([0, 8, 16, 24], np.uint32)
LANE_ROWS = np.arange(64)[:, None]


def byte_lanes(x):
    """uint32 values [64] as their bytes [64, 4], the lowest first."""
    return (x[:, None] >> BYTE_SHIFTS).astype(np.uint8)


def perm(s0, s1, selector):
    """v_perm_b32: each selector byte picks a byte of {s0, s1} (0-7), the sign of byte 1, 3, 5
    or 7 as 0x00/0xFF (8-11), 0x00 (12) or 0xFF (13 and above): one table per lane."""
    table = np.empty((64, 14), np.uint8)
    table[:, :4], table[:, 4:8] = byte_lanes(lanes64(u(s1))), byte_lanes(lanes64(u(s0)))
    table[:, 8:12] = (table[:, 1:8:2] >> 7) * np.uint8(0xFF)
    table[:, 12], table[:, 13] = 0x00, 0xFF
    picks = np.minimum(byte_lanes(lanes64(u(selector))), 13)
    chosen = table[LANE_ROWS, picks].astype(np.uint32) << BYTE_SHIFTS
    return np.bitwise_or.reduce(chosen, axis=1)


def med3(a, b, c):
    return np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))


def vmin(a, b):
    """v_min_f*: a NaN loses and -0 is below +0 (np.fmin may return either zero)."""
    low = np.fmin(a, b)
    if low.all():  # no zero result, no sign to settle
        return low
    return np.where((a == 0) & (b == 0), np.where(np.signbit(a), a, b), low)


def vmax(a, b):
    """v_max_f*: a NaN loses and +0 is above -0."""
    high = np.fmax(a, b)
    if high.all():
        return high
    return np.where((a == 0) & (b == 0), np.where(np.signbit(a), b, a), high)


def fmed3(a, b, c):
    """AMD's v_med3_f32: a NaN among the sources makes it v_min3 (where a NaN loses)."""
    median = vmax(vmin(a, b), vmin(vmax(a, b), c))
    nan = np.isnan(a) | np.isnan(b) | np.isnan(c)
    return np.where(nan, vmin(vmin(a, b), c), median)


def mul_hi(a, b, signed):
    if signed:
        return ((i64(a) * i64(b)) >> 32) & 0xFFFFFFFF
    return (a.astype(np.uint64) * np.asarray(b).astype(np.uint64)) >> np.uint64(32)


def ctz(x):
    x = u(x)
    out = np.full(x.shape, 0xFFFFFFFF, np.int64)
    for bit in range(31, -1, -1):
        out = np.where((x >> U32(bit)) & U32(1), bit, out)
    return out


def clz(x):
    x = u(x)
    out = np.full(x.shape, 0xFFFFFFFF, np.int64)
    for bit in range(32):
        out = np.where((x >> U32(bit)) & U32(1), 31 - bit, out)
    return out


def ffbh_i32(x):
    x = i64(np.asarray(x).astype(np.int32))
    flipped = np.where(x < 0, ~x, x) & 0xFFFFFFFF
    return np.where((x == 0) | (x == -1), 0xFFFFFFFF, clz(flipped))


def popcount(x):
    x = u(x)
    return np.unpackbits(x.view(np.uint8).reshape(-1, 4), axis=1).sum(axis=1).reshape(x.shape) \
        if x.ndim else bin(int(x)).count("1")


def cvt_f32_to_int(x, low, high, dtype):
    x = np.asarray(x, np.float64)
    out = np.clip(np.nan_to_num(np.trunc(x), nan=0.0), low, high)
    return out.astype(dtype)


def fract(x):
    with np.errstate(all="ignore"):
        return np.where(np.isinf(x), np.float32(np.nan), np.minimum(x - np.floor(x), np.float32(1 - 2**-24)))


def exact32(fn):
    """A transcendental computed in float64 and rounded once (hardware gives ~1 ulp)."""
    def run(x):  # run_kernel runs under np.errstate(all="ignore")
        return fn(np.asarray(x, np.float64)).astype(np.float32)
    return run


def sin_turns(x):
    """sin(2*pi*x) with x first reduced exactly (float64) to within a quarter turn, so whole,
    half and quarter turns give exact 0 and +-1, as the hardware's reduction in turns does."""
    turn = x - np.rint(x)
    turn = np.where(turn > 0.25, 0.5 - turn, np.where(turn < -0.25, -0.5 - turn, turn))
    return np.where(x == 0, x, np.sin(2 * np.pi * turn))


def cos_turns(x):
    return sin_turns(x - np.rint(x) + 0.25)


def ldexp32(x, e):
    """Exact in float64, rounded once; C's ldexp gives inf or 0 for any huge int32 exponent."""
    return np.ldexp(np.asarray(x, np.float64), np.asarray(e).astype(np.int32, copy=False)).astype(np.float32)


def frexp_mant(x):
    m, _ = np.frexp(x)
    return np.where(np.isfinite(x), m, x).astype(np.float32)


def frexp_exp(x):
    _, e = np.frexp(x)
    return np.where(np.isfinite(x), e, 0)


F, I, UU, B = "f32", "i32", "u32", "b32"
OPS = {
    # VOP2 / VOP3 fp32
    "add_f32": (F, [F, F], np.add), "sub_f32": (F, [F, F], np.subtract),
    "subrev_f32": (F, [F, F], lambda a, b: b - a), "mul_f32": (F, [F, F], np.multiply),
    "min_f32": (F, [F, F], vmin), "max_f32": (F, [F, F], vmax),
    "fma_f32": (F, [F, F, F], fma_f32), "fmac_f32": (F, [F, F, F], fma_f32),
    "fmamk_f32": (F, [F, F, F], lambda a, k, b: fma_f32(a, k, b)),
    "fmaak_f32": (F, [F, F, F], fma_f32),
    "min3_f32": (F, [F, F, F], lambda a, b, c: vmin(vmin(a, b), c)),
    "max3_f32": (F, [F, F, F], lambda a, b, c: vmax(vmax(a, b), c)),
    "med3_f32": (F, [F, F, F], fmed3), "ldexp_f32": (F, [F, I], ldexp32),
    "mul_legacy_f32": (F, [F, F], lambda a, b: np.where((a == 0) | (b == 0), np.float32(0), a * b)),
    # fp32 unary
    "mov_b32": (B, [B], lambda a: a), "not_b32": (B, [B], np.invert),
    "cvt_f32_i32": (F, [I], lambda a: a.astype(np.float32)),
    "cvt_f32_u32": (F, [UU], lambda a: a.astype(np.float32)),
    "cvt_u32_f32": (UU, [F], lambda a: cvt_f32_to_int(a, 0, 2**32 - 1, np.uint32)),
    "cvt_i32_f32": (I, [F], lambda a: cvt_f32_to_int(a, -2**31, 2**31 - 1, np.int32)),
    "cvt_rpi_i32_f32": (I, [F], lambda a: cvt_f32_to_int(np.floor(a + np.float32(0.5)), -2**31, 2**31 - 1, np.int32)),
    "cvt_flr_i32_f32": (I, [F], lambda a: cvt_f32_to_int(np.floor(a), -2**31, 2**31 - 1, np.int32)),
    "cvt_f16_f32": ("f16", [F], lambda a: a.astype(np.float16)),
    "cvt_f32_f16": (F, ["f16"], lambda a: a.astype(np.float32)),
    "cvt_f32_bf16": (F, ["u16"], lambda a: (u(a) << U32(16)).view(np.float32)),
    "cvt_f64_f32": ("f64", [F], lambda a: a.astype(np.float64)),
    "cvt_f32_f64": (F, ["f64"], lambda a: a.astype(np.float32)),
    "cvt_f64_i32": ("f64", [I], lambda a: a.astype(np.float64)),
    "cvt_f64_u32": ("f64", [UU], lambda a: a.astype(np.float64)),
    "cvt_i32_f64": (I, ["f64"], lambda a: cvt_f32_to_int(a, -2**31, 2**31 - 1, np.int32)),
    "cvt_u32_f64": (UU, ["f64"], lambda a: cvt_f32_to_int(a, 0, 2**32 - 1, np.uint32)),
    "cvt_f32_ubyte0": (F, [UU], lambda a: (a & U32(0xFF)).astype(np.float32)),
    "cvt_f32_ubyte1": (F, [UU], lambda a: (a >> U32(8) & U32(0xFF)).astype(np.float32)),
    "cvt_f32_ubyte2": (F, [UU], lambda a: (a >> U32(16) & U32(0xFF)).astype(np.float32)),
    "cvt_f32_ubyte3": (F, [UU], lambda a: (a >> U32(24)).astype(np.float32)),
    "cvt_pk_bf16_f32": (UU, [F, F], lambda a, b: f32_to_bf16(a) | f32_to_bf16(b) << U32(16)),
    "cvt_pk_f16_f32": (UU, [F, F], lambda a, b: half_bits(a) | half_bits(b) << U32(16)),
    "cvt_pkrtz_f16_f32": (UU, [F, F], lambda a, b: rtz_f16(a) | rtz_f16(b) << U32(16)),
    "pack_b32_f16": (UU, ["u16", "u16"], lambda a, b: u(a) | u(b) << U32(16)),
    "fract_f32": (F, [F], fract), "trunc_f32": (F, [F], np.trunc), "ceil_f32": (F, [F], np.ceil),
    "floor_f32": (F, [F], np.floor), "rndne_f32": (F, [F], np.rint),
    "exp_f32": (F, [F], exact32(np.exp2)), "log_f32": (F, [F], exact32(np.log2)),
    "rcp_f32": (F, [F], exact32(lambda x: 1.0 / x)), "rcp_iflag_f32": (F, [F], exact32(lambda x: 1.0 / x)),
    "rsq_f32": (F, [F], exact32(lambda x: 1.0 / np.sqrt(x))), "sqrt_f32": (F, [F], exact32(np.sqrt)),
    "sin_f32": (F, [F], exact32(sin_turns)), "cos_f32": (F, [F], exact32(cos_turns)),
    "frexp_mant_f32": (F, [F], frexp_mant), "frexp_exp_i32_f32": (I, [F], frexp_exp),
    "bfrev_b32": (B, [B], lambda a: bit_reverse(a)),
    "ffbh_u32": (UU, [UU], clz), "ffbl_b32": (UU, [UU], ctz), "ffbh_i32": (UU, [UU], ffbh_i32),
    # integer
    "add_u32": (UU, [UU, UU], np.add), "sub_u32": (UU, [UU, UU], np.subtract),
    "subrev_u32": (UU, [UU, UU], lambda a, b: b - a),
    "add_i32": (I, [I, I], np.add), "sub_i32": (I, [I, I], np.subtract),
    "mul_lo_u32": (UU, [UU, UU], np.multiply), "mul_lo_i32": (UU, [UU, UU], np.multiply),
    "mul_hi_u32": (UU, [UU, UU], lambda a, b: mul_hi(a, b, False)),
    "mul_hi_i32": (UU, [I, I], lambda a, b: mul_hi(a, b, True)),
    "mul_u32_u24": (UU, [UU, UU], lambda a, b: (a & U32(0xFFFFFF)) * (b & U32(0xFFFFFF))),
    "mul_hi_u32_u24": (UU, [UU, UU], lambda a, b: mul_hi(a & U32(0xFFFFFF), b & U32(0xFFFFFF), False)),
    "mul_i32_i24": (UU, [UU, UU], lambda a, b: i64(sext24(a) * sext24(b)) & 0xFFFFFFFF),
    "mul_hi_i32_i24": (UU, [UU, UU], lambda a, b: (sext24(a) * sext24(b)) >> 32 & 0xFFFFFFFF),
    "mad_u32_u24": (UU, [UU, UU, UU], lambda a, b, c: (a & U32(0xFFFFFF)) * (b & U32(0xFFFFFF)) + c),
    "mad_i32_i24": (UU, [UU, UU, UU], lambda a, b, c: (sext24(a) * sext24(b) + i64(c)) & 0xFFFFFFFF),
    "min_i32": (I, [I, I], np.minimum), "max_i32": (I, [I, I], np.maximum),
    "min_u32": (UU, [UU, UU], np.minimum), "max_u32": (UU, [UU, UU], np.maximum),
    "min3_i32": (I, [I, I, I], lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "max3_i32": (I, [I, I, I], lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "min3_u32": (UU, [UU, UU, UU], lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "max3_u32": (UU, [UU, UU, UU], lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "med3_i32": (I, [I, I, I], med3), "med3_u32": (UU, [UU, UU, UU], med3),
    "lshlrev_b32": (B, [UU, B], lambda s, a: a << shift32(s)),
    "lshrrev_b32": (B, [UU, B], lambda s, a: a >> shift32(s)),
    "ashrrev_i32": (I, [UU, I], lambda s, a: a >> shift32(s).astype(np.int32)),
    "and_b32": (B, [B, B], np.bitwise_and), "or_b32": (B, [B, B], np.bitwise_or),
    "xor_b32": (B, [B, B], np.bitwise_xor), "xnor_b32": (B, [B, B], lambda a, b: ~(a ^ b)),
    "bfe_u32": (UU, [UU, UU, UU], lambda a, o, w: bfe(a, o, w, False)),
    "bfe_i32": (UU, [UU, UU, UU], lambda a, o, w: bfe(a, o, w, True) & 0xFFFFFFFF),
    "bfi_b32": (B, [B, B, B], lambda m, a, b: (m & a) | (~m & b)),
    "bfm_b32": (B, [UU, UU], lambda w, o: ((U32(1) << (w & U32(31))) - U32(1)) << (o & U32(31))),
    "alignbit_b32": (B, [B, B, UU], lambda a, b, s: u(((i64(a) << 32 | i64(b)) >> i64(s & U32(31))) & 0xFFFFFFFF)),
    "alignbyte_b32": (B, [B, B, UU], lambda a, b, s: u(((i64(a) << 32 | i64(b)) >> (8 * i64(s & U32(3))))
                                                        & 0xFFFFFFFF)),
    "lshl_add_u32": (UU, [UU, UU, UU], lambda a, s, c: (a << shift32(s)) + c),
    "add_lshl_u32": (UU, [UU, UU, UU], lambda a, b, s: (a + b) << shift32(s)),
    "add3_u32": (UU, [UU, UU, UU], lambda a, b, c: a + b + c),
    "lshl_or_b32": (B, [B, UU, B], lambda a, s, c: (a << shift32(s)) | c),
    "and_or_b32": (B, [B, B, B], lambda a, b, c: (a & b) | c),
    "or3_b32": (B, [B, B, B], lambda a, b, c: a | b | c),
    "xad_u32": (UU, [UU, UU, UU], lambda a, b, c: (a ^ b) + c),
    "perm_b32": (B, [B, B, B], perm),
    "bcnt_u32_b32": (UU, [UU, UU], lambda a, b: popcount(a) + b),
    "sad_u32": (UU, [UU, UU, UU], lambda a, b, c: u(np.abs(i64(a) - i64(b))) + c),
    # 64-bit
    "lshlrev_b64": ("b64", [UU, "b64"], lambda s, a: a << (s & U32(63)).astype(np.uint64)),
    "lshrrev_b64": ("b64", [UU, "b64"], lambda s, a: a >> (s & U32(63)).astype(np.uint64)),
    "ashrrev_i64": ("i64", [UU, "i64"], lambda s, a: a >> (s & U32(63)).astype(np.int64)),
    "lshl_add_u64": ("u64", ["u64", UU, "u64"], lambda a, s, c: (a << (s & U32(7)).astype(np.uint64)) + c),
    "mov_b64": ("b64", ["b64"], lambda a: a),
    "add_f64": ("f64", ["f64", "f64"], np.add), "mul_f64": ("f64", ["f64", "f64"], np.multiply),
    "fma_f64": ("f64", ["f64", "f64", "f64"], fma_f64),
    "min_f64": ("f64", ["f64", "f64"], vmin), "max_f64": ("f64", ["f64", "f64"], vmax),
    "rcp_f64": ("f64", ["f64"], lambda a: 1.0 / a), "sqrt_f64": ("f64", ["f64"], np.sqrt),
    "rsq_f64": ("f64", ["f64"], lambda a: 1.0 / np.sqrt(a)),
    "ldexp_f64": ("f64", ["f64", I], lambda a, e: np.ldexp(a, np.clip(e, -3000, 3000))),
    "trunc_f64": ("f64", ["f64"], np.trunc), "floor_f64": ("f64", ["f64"], np.floor),
    "fract_f64": ("f64", ["f64"], lambda a: np.minimum(a - np.floor(a), 1 - 2**-53)),
    # 16-bit
    "add_f16": ("f16", ["f16", "f16"], np.add), "sub_f16": ("f16", ["f16", "f16"], np.subtract),
    "subrev_f16": ("f16", ["f16", "f16"], lambda a, b: b - a),
    "mul_f16": ("f16", ["f16", "f16"], np.multiply),
    "max_f16": ("f16", ["f16", "f16"], vmax), "min_f16": ("f16", ["f16", "f16"], vmin),
    "fma_f16": ("f16", ["f16", "f16", "f16"], lambda a, b, c: fma16(a, b, c)),
    "exp_f16": ("f16", ["f16"], lambda a: np.exp2(a.astype(np.float64)).astype(np.float16)),
    "rcp_f16": ("f16", ["f16"], lambda a: (1.0 / a.astype(np.float64)).astype(np.float16)),
    "add_u16": ("u16", ["u16", "u16"], np.add), "sub_u16": ("u16", ["u16", "u16"], np.subtract),
    "mul_lo_u16": ("u16", ["u16", "u16"], np.multiply),
    "lshlrev_b16": ("u16", ["u16", "u16"], lambda s, a: a << (s & np.uint16(15))),
    "lshrrev_b16": ("u16", ["u16", "u16"], lambda s, a: a >> (s & np.uint16(15))),
    "ashrrev_i16": ("i16", ["u16", "i16"], lambda s, a: a >> (s & np.uint16(15)).astype(np.int16)),
    "max_u16": ("u16", ["u16", "u16"], np.maximum), "min_u16": ("u16", ["u16", "u16"], np.minimum),
    "max_i16": ("i16", ["i16", "i16"], np.maximum), "min_i16": ("i16", ["i16", "i16"], np.minimum),
    "cvt_f16_u16": ("f16", ["u16"], lambda a: a.astype(np.float16)),
    "cvt_f16_i16": ("f16", ["i16"], lambda a: a.astype(np.float16)),
    "cvt_u16_f16": ("u16", ["f16"], lambda a: cvt_f32_to_int(a, 0, 65535, np.uint16)),
    "cvt_i16_f16": ("i16", ["f16"], lambda a: cvt_f32_to_int(a, -32768, 32767, np.int16)),
}


def fma16(a, b, c):
    """f16 fma: the product is exact in float64, the sum rounds there first (ample for 11 bits)."""
    return (a.astype(np.float64) * b + c).astype(np.float16)


def sext24(x):
    x = i64(u(x)) & 0xFFFFFF
    return (x ^ 0x800000) - 0x800000


def bit_reverse(x):
    x = u(x)
    out = np.zeros(x.shape, np.uint32)
    for bit in range(32):
        out |= ((x >> U32(bit)) & U32(1)) << U32(31 - bit)
    return out


def half_bits(x):
    """float32 -> f16 bits, nearest even (numpy converts from float32 directly: one rounding)."""
    return u(x.astype(np.float16).view(np.uint16))


def rtz_f16(x):
    """float32 -> f16 bits rounded toward zero (v_cvt_pkrtz_f16_f32)."""
    x = np.asarray(x, np.float32)
    nearest = x.astype(np.float16)
    too_far = np.abs(nearest.astype(np.float32)) > np.abs(x)
    toward = np.nextafter(nearest, np.float16(0))
    finite = np.isfinite(x)
    return np.where(too_far & finite, toward, nearest).view(np.uint16).astype(np.uint32)
