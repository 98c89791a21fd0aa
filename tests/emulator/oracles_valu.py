"""Oracles for every elementwise VALU opcode of harness/emulator/valu_ops.OPS, written from AMD's
CDNA4 pseudocode with Python ints, exact fractions, struct and mpmath. Nothing here imports the
emulator: each oracle maps one lane's source bits to the result's bits."""
import math
import struct
from dataclasses import dataclass
from fractions import Fraction

import mpmath

mpmath.mp.prec = 120  # far past 53 bits: rounding the result once is then exact in practice


@dataclass(frozen=True)
class Format:
    width: int
    precision: int  # significand bits, the hidden one included
    emin: int       # exponent of the smallest normal
    emax: int
    code: str       # struct's code ('' for bf16: packed through f32)


F16 = Format(16, 11, -14, 15, "<e")
BF16 = Format(16, 8, -126, 127, "")
F32 = Format(32, 24, -126, 127, "<f")
F64 = Format(64, 53, -1022, 1023, "<d")
FORMATS = {"f16": F16, "f32": F32, "f64": F64, "pk_f16": F16, "pk_bf16": BF16}
WIDTHS = {"f16": 16, "u16": 16, "i16": 16, "f32": 32, "u32": 32, "i32": 32, "b32": 32,
          "pk_f16": 32, "pk_bf16": 32, "f64": 64, "u64": 64, "i64": 64, "b64": 64}


def value(bits: int, fmt: Format) -> float:
    if not fmt.code:
        return value(bits << 16, F32)
    return struct.unpack(fmt.code, bits.to_bytes(fmt.width // 8, "little"))[0]


def pack(x: float, fmt: Format) -> int:
    if not fmt.code:
        return pack(x, F32) >> 16
    return int.from_bytes(struct.pack(fmt.code, x), "little")


def sign_bit(bits: int, fmt: Format) -> int:
    return bits >> (fmt.width - 1) & 1


def is_nan(bits: int, fmt: Format) -> bool:
    return math.isnan(value(bits, fmt))


def is_signaling(bits: int, fmt: Format) -> bool:
    quiet_bit = 1 << (fmt.precision - 2)
    return is_nan(bits, fmt) and not bits & quiet_bit


def encode(x, fmt: Format, toward_zero: bool = False) -> int:
    """An exact value (int, Fraction, or a float inf/NaN/zero) rounded once into fmt:
    nearest even, or toward zero (where overflow stops at the largest finite value)."""
    if isinstance(x, float) and (not math.isfinite(x) or x == 0):
        return pack(x, fmt)
    exact = Fraction(x)
    if exact == 0:
        return pack(0.0, fmt)
    sign = -1 if exact < 0 else 1
    magnitude = abs(exact)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    quantum = Fraction(2) ** (max(exponent, fmt.emin) - fmt.precision + 1)
    steps = magnitude / quantum
    rounded = (math.floor(steps) if toward_zero else round(steps)) * quantum
    top = Fraction(2) ** (fmt.emax + 1)
    if rounded >= top:
        largest = top - Fraction(2) ** (fmt.emax - fmt.precision + 1)
        return pack(sign * (float(largest) if toward_zero else math.inf), fmt)
    return pack(sign * float(rounded), fmt)


def to_int(x: float, low: int, high: int) -> int:
    """f32_to_i32 and friends: toward zero, clamped, NaN gives 0."""
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return high if x > 0 else low
    return min(max(math.trunc(x), low), high)


def signed(bits: int, width: int) -> int:
    return bits - (1 << width) if bits >> (width - 1) & 1 else bits


# ---- float arithmetic: exact, then one rounding; IEEE's rules for zeros and specials


def exact_or_special(fmt, exact, special, *values):
    """The rounded exact value when every input is finite and the result is not zero;
    else `special` (a Python float computed by IEEE rules)."""
    if all(math.isfinite(v) for v in values):
        result = exact()
        if result != 0:
            return encode(result, fmt)
    return encode(special(), fmt)


def add(fmt):
    def run(a, b):
        x, y = value(a, fmt), value(b, fmt)
        return exact_or_special(fmt, lambda: Fraction(x) + Fraction(y), lambda: x + y, x, y)
    return run


def sub(fmt, reverse=False):
    def run(a, b):
        a, b = (b, a) if reverse else (a, b)
        x, y = value(a, fmt), value(b, fmt)
        return exact_or_special(fmt, lambda: Fraction(x) - Fraction(y), lambda: x - y, x, y)
    return run


def mul(fmt):
    def run(a, b):
        x, y = value(a, fmt), value(b, fmt)
        return exact_or_special(fmt, lambda: Fraction(x) * Fraction(y), lambda: x * y, x, y)
    return run


def fma(fmt):
    def run(a, b, c):
        x, y, z = value(a, fmt), value(b, fmt), value(c, fmt)

        def special():  # inf/NaN, or an exact zero: x*y+z of signed zeros, else +0
            finite = all(map(math.isfinite, (x, y, z)))
            return 0.0 if finite and x != 0 and y != 0 else x * y + z
        return exact_or_special(fmt, lambda: Fraction(x) * Fraction(y) + Fraction(z), special, x, y, z)
    return run


# Our reading: v_min/v_max run as AMD's pseudocode with WAVE_MODE.IEEE = 0, where a signaling
# NaN loses like a quiet one. LLVM sets IEEE = 1 for compute kernels (the hardware then returns
# it quieted); no arithmetic makes a signaling NaN, and the emulator does not model the bit.
IEEE_MODE = False


def quiet_first(a, b, fmt):
    """IEEE mode: a signaling NaN source comes back quieted (None: no such source)."""
    for bits in (a, b):
        if IEEE_MODE and is_signaling(bits, fmt):
            return bits | 1 << (fmt.precision - 2)
    return None


def extreme(fmt, smaller: bool):
    """v_min (smaller) or v_max: a NaN loses; -0 is below +0."""
    def run(a, b):
        quiet = quiet_first(a, b, fmt)
        if quiet is not None:
            return quiet
        if is_nan(a, fmt):
            return b
        if is_nan(b, fmt):
            return a
        x, y = value(a, fmt), value(b, fmt)
        if x == y == 0:
            return a if bool(sign_bit(a, fmt)) == smaller else b
        if x == y:  # equal non-zero values have equal bits
            return a
        return a if (x < y) == smaller else b
    return run


def minimum(fmt):
    return extreme(fmt, smaller=True)


def maximum(fmt):
    return extreme(fmt, smaller=False)


def min3(fmt):
    low = minimum(fmt)
    return lambda a, b, c: low(low(a, b), c)


def max3(fmt):
    high = maximum(fmt)
    return lambda a, b, c: high(high(a, b), c)


def med3_float(a, b, c):
    """v_med3_f32 as the pseudocode writes it (a NaN anywhere: min3)."""
    if any(is_nan(v, F32) for v in (a, b, c)):
        return min3(F32)(a, b, c)
    top, high = value(max3(F32)(a, b, c), F32), maximum(F32)
    if top == value(a, F32):
        return high(b, c)
    if top == value(b, F32):
        return high(a, c)
    return high(a, b)


def ldexp(fmt):
    def run(a, e):
        x, e = value(a, fmt), signed(e, 32)
        if not math.isfinite(x) or x == 0:
            return a
        e = min(max(e, -3000), 3000)  # past +-3000 every format has overflowed or underflowed
        return encode(Fraction(x) * Fraction(2) ** e, fmt)
    return run


def integral(fmt, how):
    """trunc/floor/ceil/rndne (IEEE roundToIntegral: a zero keeps the source's sign)."""
    def run(a):
        x = value(a, fmt)
        if not math.isfinite(x):
            return a
        whole = how(Fraction(x))
        return encode(math.copysign(0.0, x) if whole == 0 else whole, fmt)
    return run


def fract(fmt):
    """Our reading: x - floor(x), held below 1 (AMD: 'fractional portion'; the pseudocode's
    S0 + -floor(S0) rounds to 1.0 for tiny negatives); inf gives NaN."""
    below_one = 1 - Fraction(2) ** -fmt.precision

    def run(a):
        x = value(a, fmt)
        if not math.isfinite(x):
            return encode(math.nan, fmt)
        part = Fraction(x) - math.floor(x)
        return encode(min(part, below_one) if part else 0.0, fmt)
    return run


def transcendental(fmt, fn, special):
    """The exactly rounded value of fn (mpmath at 120 bits); `special` answers the
    inputs the IEEE rules settle (or None)."""
    def run(a):
        x = value(a, fmt)
        settled = special(x)
        if settled is not None:
            return encode(settled, fmt)
        exact = mpmath.mpf(fn(mpmath.mpf(x)))
        mantissa, exponent = exact.man_exp  # the magnitude's
        sign = -1 if exact < 0 else 1
        if not mantissa:
            return encode(0.0, fmt)
        scale = exponent + mantissa.bit_length()
        if abs(scale) > 3000:  # far past every format's range: inf or zero, with the sign
            return encode(sign * (math.inf if scale > 0 else 0.0), fmt)
        return encode(sign * Fraction(mantissa) * Fraction(2) ** exponent, fmt)
    return run


def rcp_special(x):
    if math.isnan(x):
        return x
    if math.isinf(x):
        return math.copysign(0.0, x)
    return math.copysign(math.inf, x) if x == 0 else None


def rsq_special(x):
    if math.isnan(x) or x < 0:
        return math.nan
    if x == 0:
        return math.copysign(math.inf, x)
    return 0.0 if math.isinf(x) else None


def sqrt_special(x):
    if math.isnan(x) or x < 0:
        return math.nan
    return x if x == 0 or math.isinf(x) else None


def exp_special(x):
    if math.isnan(x):
        return x
    return (0.0 if x < 0 else math.inf) if math.isinf(x) else None


def log_special(x):
    if math.isnan(x) or x < 0:
        return math.nan
    if x == 0:
        return -math.inf
    return math.inf if math.isinf(x) else None


def periodic_special(x):
    return math.nan if not math.isfinite(x) else None


def frexp_mant(a):
    x = value(a, F32)
    return a if not math.isfinite(x) else encode(math.frexp(x)[0], F32)


def frexp_exp(a):
    x = value(a, F32)
    return 0 if not math.isfinite(x) else math.frexp(x)[1] & 0xFFFFFFFF


# ---- integers: Python ints, masked to the width


def u32(fn):
    return lambda *xs: fn(*xs) & 0xFFFFFFFF


def i32(fn):
    return lambda *xs: fn(*(signed(x, 32) for x in xs)) & 0xFFFFFFFF


def first_one_from_top(x):
    return 31 - x.bit_length() + 1 if x else 0xFFFFFFFF


def first_one_from_bottom(x):
    return (x & -x).bit_length() - 1 if x else 0xFFFFFFFF


def first_sign_change(x):
    """v_ffbh_i32: the first bit from the top that differs from the sign bit."""
    top = x >> 31
    for i in range(1, 32):
        if (x >> (31 - i) & 1) != top:
            return i
    return 0xFFFFFFFF


def bit_field(x, offset, width, is_signed):
    offset, width = offset & 31, width & 31
    field = x >> offset & ((1 << width) - 1)
    if is_signed and width:
        field = signed(field, width)
    return field & 0xFFFFFFFF


def byte_permute(s0, s1, selector):
    pool = (s0 << 32 | s1).to_bytes(8, "little")
    out = 0
    for at in range(4):
        sel = selector >> (8 * at) & 0xFF
        if sel >= 13:
            byte = 0xFF
        elif sel == 12:
            byte = 0
        elif sel >= 8:
            byte = 0xFF if pool[2 * (sel - 8) + 1] & 0x80 else 0
        else:
            byte = pool[sel]
        out |= byte << (8 * at)
    return out


def u24(x):
    return x & 0xFFFFFF


def i24(x):
    return signed(x & 0xFFFFFF, 24)


def cvt_int_to(fmt, width, is_signed):
    return lambda a: encode(signed(a, width) if is_signed else a, fmt)


def cvt_to_int(fmt, low, high, width):
    return lambda a: to_int(value(a, fmt), low, high) & ((1 << width) - 1)


def pair(fmt_in, fmt_out, toward_zero=False):
    def half(bits):
        return encode(value(bits, fmt_in), fmt_out, toward_zero)
    return lambda a, b: half(a) | half(b) << 16


def convert(fmt_in, fmt_out):
    return lambda a: encode(value(a, fmt_in), fmt_out)


def mul_legacy(a, b):
    x, y = value(a, F32), value(b, F32)
    return 0 if x == 0 or y == 0 else mul(F32)(a, b)


def rpi(a):
    """f32_to_i32(floor(S0 + 0.5F)): the sum rounds to f32 first."""
    total = value(add(F32)(a, pack(0.5, F32)), F32)
    return to_int(math.floor(total) if math.isfinite(total) else total, -2**31, 2**31 - 1) & 0xFFFFFFFF


def flr(a):
    x = value(a, F32)
    return to_int(math.floor(x) if math.isfinite(x) else x, -2**31, 2**31 - 1) & 0xFFFFFFFF


def shifted16(fn):
    return lambda s, a: fn(s & 15, a) & 0xFFFF


def rne(q: Fraction) -> int:
    return round(q)


@dataclass(frozen=True)
class Case:
    """One opcode: its source kinds, result kind, the oracle, and the form it is written in."""
    sources: tuple
    result: str
    oracle: object
    ulps: int = 0           # 1 for the transcendentals (AMD: about 1 ulp), 0 elsewhere
    literal: int | None = None  # the source position written as a 32-bit literal (fmamk/fmaak)
    accumulate: bool = False    # the last source is the destination itself (fmac)


def case(sources: str, result: str, oracle, **kw) -> Case:
    return Case(tuple(sources.split()), result, oracle, **kw)


TURN = 2  # v_sin/v_cos take turns: sin(2*pi*x)
ORACLE = {
    "add_f32": case("f32 f32", "f32", add(F32)), "sub_f32": case("f32 f32", "f32", sub(F32)),
    "subrev_f32": case("f32 f32", "f32", sub(F32, reverse=True)),
    "mul_f32": case("f32 f32", "f32", mul(F32)),
    "min_f32": case("f32 f32", "f32", minimum(F32)), "max_f32": case("f32 f32", "f32", maximum(F32)),
    "fma_f32": case("f32 f32 f32", "f32", fma(F32)),
    "fmac_f32": case("f32 f32 f32", "f32", fma(F32), accumulate=True),
    "fmamk_f32": case("f32 f32 f32", "f32", fma(F32), literal=1),
    "fmaak_f32": case("f32 f32 f32", "f32", fma(F32), literal=2),
    "min3_f32": case("f32 f32 f32", "f32", min3(F32)), "max3_f32": case("f32 f32 f32", "f32", max3(F32)),
    "med3_f32": case("f32 f32 f32", "f32", med3_float),
    "ldexp_f32": case("f32 i32", "f32", ldexp(F32)),
    "mul_legacy_f32": case("f32 f32", "f32", mul_legacy),
    "mov_b32": case("b32", "b32", lambda a: a), "not_b32": case("b32", "b32", u32(lambda a: ~a)),
    "cvt_f32_i32": case("i32", "f32", cvt_int_to(F32, 32, True)),
    "cvt_f32_u32": case("u32", "f32", cvt_int_to(F32, 32, False)),
    "cvt_u32_f32": case("f32", "u32", cvt_to_int(F32, 0, 2**32 - 1, 32)),
    "cvt_i32_f32": case("f32", "i32", cvt_to_int(F32, -2**31, 2**31 - 1, 32)),
    "cvt_rpi_i32_f32": case("f32", "i32", rpi), "cvt_flr_i32_f32": case("f32", "i32", flr),
    "cvt_f16_f32": case("f32", "f16", convert(F32, F16)),
    "cvt_f32_f16": case("f16", "f32", convert(F16, F32)),
    "cvt_f32_bf16": case("u16", "f32", lambda a: a << 16),
    "cvt_f64_f32": case("f32", "f64", convert(F32, F64)),
    "cvt_f32_f64": case("f64", "f32", convert(F64, F32)),
    "cvt_f64_i32": case("i32", "f64", cvt_int_to(F64, 32, True)),
    "cvt_f64_u32": case("u32", "f64", cvt_int_to(F64, 32, False)),
    "cvt_i32_f64": case("f64", "i32", cvt_to_int(F64, -2**31, 2**31 - 1, 32)),
    "cvt_u32_f64": case("f64", "u32", cvt_to_int(F64, 0, 2**32 - 1, 32)),
    **{f"cvt_f32_ubyte{k}": case("u32", "f32", (lambda k: lambda a: encode(a >> (8 * k) & 0xFF, F32))(k))
       for k in range(4)},
    "cvt_pk_bf16_f32": case("f32 f32", "pk_bf16", pair(F32, BF16)),
    "cvt_pk_f16_f32": case("f32 f32", "pk_f16", pair(F32, F16)),
    "cvt_pkrtz_f16_f32": case("f32 f32", "pk_f16", pair(F32, F16, toward_zero=True)),
    "pack_b32_f16": case("u16 u16", "u32", lambda a, b: a | b << 16),
    "fract_f32": case("f32", "f32", fract(F32)),
    "trunc_f32": case("f32", "f32", integral(F32, math.trunc)),
    "ceil_f32": case("f32", "f32", integral(F32, math.ceil)),
    "floor_f32": case("f32", "f32", integral(F32, math.floor)),
    "rndne_f32": case("f32", "f32", integral(F32, rne)),
    "exp_f32": case("f32", "f32", transcendental(F32, lambda x: mpmath.mpf(2) ** x, exp_special), ulps=1),
    "log_f32": case("f32", "f32", transcendental(F32, lambda x: mpmath.log(x, 2), log_special), ulps=1),
    "rcp_f32": case("f32", "f32", transcendental(F32, lambda x: 1 / x, rcp_special), ulps=1),
    "rcp_iflag_f32": case("f32", "f32", transcendental(F32, lambda x: 1 / x, rcp_special), ulps=1),
    "rsq_f32": case("f32", "f32", transcendental(F32, lambda x: 1 / mpmath.sqrt(x), rsq_special), ulps=1),
    "sqrt_f32": case("f32", "f32", transcendental(F32, mpmath.sqrt, sqrt_special), ulps=1),
    "sin_f32": case("f32", "f32", transcendental(F32, lambda x: mpmath.sinpi(TURN * x), periodic_special),
                    ulps=1),
    "cos_f32": case("f32", "f32", transcendental(F32, lambda x: mpmath.cospi(TURN * x), periodic_special),
                    ulps=1),
    "frexp_mant_f32": case("f32", "f32", frexp_mant), "frexp_exp_i32_f32": case("f32", "i32", frexp_exp),
    "bfrev_b32": case("b32", "b32", lambda a: int(f"{a:032b}"[::-1], 2)),
    "ffbh_u32": case("u32", "u32", first_one_from_top),
    "ffbl_b32": case("u32", "u32", first_one_from_bottom),
    "ffbh_i32": case("u32", "u32", first_sign_change),
    "add_u32": case("u32 u32", "u32", u32(lambda a, b: a + b)),
    "sub_u32": case("u32 u32", "u32", u32(lambda a, b: a - b)),
    "subrev_u32": case("u32 u32", "u32", u32(lambda a, b: b - a)),
    "add_i32": case("i32 i32", "i32", i32(lambda a, b: a + b)),
    "sub_i32": case("i32 i32", "i32", i32(lambda a, b: a - b)),
    "mul_lo_u32": case("u32 u32", "u32", u32(lambda a, b: a * b)),
    "mul_lo_i32": case("i32 i32", "u32", i32(lambda a, b: a * b)),
    "mul_hi_u32": case("u32 u32", "u32", u32(lambda a, b: a * b >> 32)),
    "mul_hi_i32": case("i32 i32", "u32", i32(lambda a, b: a * b >> 32)),
    "mul_u32_u24": case("u32 u32", "u32", u32(lambda a, b: u24(a) * u24(b))),
    "mul_hi_u32_u24": case("u32 u32", "u32", u32(lambda a, b: u24(a) * u24(b) >> 32)),
    "mul_i32_i24": case("u32 u32", "u32", u32(lambda a, b: i24(a) * i24(b))),
    "mul_hi_i32_i24": case("u32 u32", "u32", u32(lambda a, b: i24(a) * i24(b) >> 32)),
    "mad_u32_u24": case("u32 u32 u32", "u32", u32(lambda a, b, c: u24(a) * u24(b) + c)),
    "mad_i32_i24": case("u32 u32 u32", "u32", u32(lambda a, b, c: i24(a) * i24(b) + c)),
    "min_i32": case("i32 i32", "i32", i32(min)), "max_i32": case("i32 i32", "i32", i32(max)),
    "min_u32": case("u32 u32", "u32", min), "max_u32": case("u32 u32", "u32", max),
    "min3_i32": case("i32 i32 i32", "i32", i32(min)), "max3_i32": case("i32 i32 i32", "i32", i32(max)),
    "min3_u32": case("u32 u32 u32", "u32", min), "max3_u32": case("u32 u32 u32", "u32", max),
    "med3_i32": case("i32 i32 i32", "i32", i32(lambda *xs: sorted(xs)[1])),
    "med3_u32": case("u32 u32 u32", "u32", lambda *xs: sorted(xs)[1]),
    "lshlrev_b32": case("u32 b32", "b32", u32(lambda s, a: a << (s & 31))),
    "lshrrev_b32": case("u32 b32", "b32", lambda s, a: a >> (s & 31)),
    "ashrrev_i32": case("u32 i32", "i32", lambda s, a: (signed(a, 32) >> (s & 31)) & 0xFFFFFFFF),
    "and_b32": case("b32 b32", "b32", lambda a, b: a & b),
    "or_b32": case("b32 b32", "b32", lambda a, b: a | b),
    "xor_b32": case("b32 b32", "b32", lambda a, b: a ^ b),
    "xnor_b32": case("b32 b32", "b32", u32(lambda a, b: ~(a ^ b))),
    "bfe_u32": case("u32 u32 u32", "u32", lambda a, o, w: bit_field(a, o, w, False)),
    "bfe_i32": case("u32 u32 u32", "u32", lambda a, o, w: bit_field(a, o, w, True)),
    "bfi_b32": case("b32 b32 b32", "b32", lambda m, a, b: (m & a) | (~m & b & 0xFFFFFFFF)),
    "bfm_b32": case("u32 u32", "b32", u32(lambda w, o: ((1 << (w & 31)) - 1) << (o & 31))),
    "alignbit_b32": case("b32 b32 u32", "b32", u32(lambda a, b, s: (a << 32 | b) >> (s & 31))),
    "alignbyte_b32": case("b32 b32 u32", "b32", u32(lambda a, b, s: (a << 32 | b) >> (8 * (s & 3)))),
    "lshl_add_u32": case("u32 u32 u32", "u32", u32(lambda a, s, c: (a << (s & 31)) + c)),
    "add_lshl_u32": case("u32 u32 u32", "u32", u32(lambda a, b, s: ((a + b) & 0xFFFFFFFF) << (s & 31))),
    "add3_u32": case("u32 u32 u32", "u32", u32(lambda a, b, c: a + b + c)),
    "lshl_or_b32": case("b32 u32 b32", "b32", u32(lambda a, s, c: (a << (s & 31)) | c)),
    "and_or_b32": case("b32 b32 b32", "b32", lambda a, b, c: (a & b) | c),
    "or3_b32": case("b32 b32 b32", "b32", lambda a, b, c: a | b | c),
    "xad_u32": case("u32 u32 u32", "u32", u32(lambda a, b, c: (a ^ b) + c)),
    "perm_b32": case("b32 b32 b32", "b32", byte_permute),
    "bcnt_u32_b32": case("u32 u32", "u32", u32(lambda a, b: bin(a).count("1") + b)),
    "sad_u32": case("u32 u32 u32", "u32", u32(lambda a, b, c: abs(a - b) + c)),
    "lshlrev_b64": case("u32 b64", "b64", lambda s, a: (a << (s & 63)) & (2**64 - 1)),
    "lshrrev_b64": case("u32 b64", "b64", lambda s, a: a >> (s & 63)),
    "ashrrev_i64": case("u32 i64", "i64", lambda s, a: (signed(a, 64) >> (s & 63)) & (2**64 - 1)),
    "lshl_add_u64": case("u64 u32 u64", "u64", lambda a, s, c: ((a << (s & 7)) + c) & (2**64 - 1)),
    "mov_b64": case("b64", "b64", lambda a: a),
    "add_f64": case("f64 f64", "f64", add(F64)), "mul_f64": case("f64 f64", "f64", mul(F64)),
    "fma_f64": case("f64 f64 f64", "f64", fma(F64)),
    "min_f64": case("f64 f64", "f64", minimum(F64)), "max_f64": case("f64 f64", "f64", maximum(F64)),
    "rcp_f64": case("f64", "f64", transcendental(F64, lambda x: 1 / x, rcp_special), ulps=1),
    "sqrt_f64": case("f64", "f64", transcendental(F64, mpmath.sqrt, sqrt_special), ulps=1),
    "rsq_f64": case("f64", "f64", transcendental(F64, lambda x: 1 / mpmath.sqrt(x), rsq_special), ulps=1),
    "ldexp_f64": case("f64 i32", "f64", ldexp(F64)),
    "trunc_f64": case("f64", "f64", integral(F64, math.trunc)),
    "floor_f64": case("f64", "f64", integral(F64, math.floor)),
    "fract_f64": case("f64", "f64", fract(F64)),
    "add_f16": case("f16 f16", "f16", add(F16)), "sub_f16": case("f16 f16", "f16", sub(F16)),
    "subrev_f16": case("f16 f16", "f16", sub(F16, reverse=True)),
    "mul_f16": case("f16 f16", "f16", mul(F16)),
    "max_f16": case("f16 f16", "f16", maximum(F16)), "min_f16": case("f16 f16", "f16", minimum(F16)),
    "fma_f16": case("f16 f16 f16", "f16", fma(F16)),
    "exp_f16": case("f16", "f16", transcendental(F16, lambda x: mpmath.mpf(2) ** x, exp_special), ulps=1),
    "rcp_f16": case("f16", "f16", transcendental(F16, lambda x: 1 / x, rcp_special), ulps=1),
    "add_u16": case("u16 u16", "u16", lambda a, b: (a + b) & 0xFFFF),
    "sub_u16": case("u16 u16", "u16", lambda a, b: (a - b) & 0xFFFF),
    "mul_lo_u16": case("u16 u16", "u16", lambda a, b: (a * b) & 0xFFFF),
    "lshlrev_b16": case("u16 u16", "u16", shifted16(lambda s, a: a << s)),
    "lshrrev_b16": case("u16 u16", "u16", shifted16(lambda s, a: a >> s)),
    "ashrrev_i16": case("u16 i16", "i16", shifted16(lambda s, a: signed(a, 16) >> s)),
    "max_u16": case("u16 u16", "u16", max), "min_u16": case("u16 u16", "u16", min),
    "max_i16": case("i16 i16", "i16", lambda a, b: max(a, b, key=lambda v: signed(v, 16))),
    "min_i16": case("i16 i16", "i16", lambda a, b: min(a, b, key=lambda v: signed(v, 16))),
    "cvt_f16_u16": case("u16", "f16", cvt_int_to(F16, 16, False)),
    "cvt_f16_i16": case("i16", "f16", cvt_int_to(F16, 16, True)),
    "cvt_u16_f16": case("f16", "u16", cvt_to_int(F16, 0, 65535, 16)),
    "cvt_i16_f16": case("f16", "i16", cvt_to_int(F16, -32768, 32767, 16)),
}
