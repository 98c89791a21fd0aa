"""Bit-exact number formats of gfx950: OCP fp8/bf8, fp6, fp4, e8m0, bf16, fp16; fp32 FMA rounded once."""
import numpy as np

F32_SIGN = np.uint32(0x80000000)
LOW28 = np.uint64(0x0FFFFFFF)  # the float64 mantissa bits below a float32 half-ulp


def minifloat_table(exponent_bits: int, mantissa_bits: int, bias: int, special: str) -> np.ndarray:
    """Every code of a small float format as float32 ('ocp_e4m3': only S.1111.111 is NaN;
    'ieee': the top exponent is inf/NaN; 'none': all codes finite)."""
    width = 1 + exponent_bits + mantissa_bits
    values = np.zeros(1 << width, np.float32)
    top = (1 << exponent_bits) - 1
    for code in range(1 << width):
        sign = -1.0 if code >> (width - 1) & 1 else 1.0
        exponent = code >> mantissa_bits & top
        mantissa = code & ((1 << mantissa_bits) - 1)
        if exponent == 0:
            value = mantissa / (1 << mantissa_bits) * 2.0 ** (1 - bias)
        else:
            value = (1 + mantissa / (1 << mantissa_bits)) * 2.0 ** (exponent - bias)
        if special == "ocp_e4m3" and exponent == top and mantissa == (1 << mantissa_bits) - 1:
            value = float("nan")
        if special == "ieee" and exponent == top:
            value = float("inf") if mantissa == 0 else float("nan")
        values[code] = sign * value
    return values


FP8_E4M3 = minifloat_table(4, 3, 7, "ocp_e4m3")  # gfx950 fp8: OCP, bias 7, max 448
BF8_E5M2 = minifloat_table(5, 2, 15, "ieee")     # gfx950 bf8: bias 15, max 57344
FP6_E2M3 = minifloat_table(2, 3, 1, "none")
FP6_E3M2 = minifloat_table(3, 2, 3, "none")
FP4_E2M1 = minifloat_table(2, 1, 1, "none")
FORMATS = {"fp8": (FP8_E4M3, 8), "bf8": (BF8_E5M2, 8), "fp6": (FP6_E2M3, 6),
           "bf6": (FP6_E3M2, 6), "fp4": (FP4_E2M1, 4)}


def e8m0_scale(codes) -> np.ndarray:
    """An e8m0 scale byte as the float64 power of two it means (0xff: NaN)."""
    codes = np.asarray(codes, np.int64)
    return np.where(codes == 0xFF, np.nan, np.ldexp(1.0, codes - 127))


def encode_minifloat(x, table: np.ndarray, saturate: bool) -> np.ndarray:
    """float32 -> the nearest code, ties to even, as the hardware's RNE conversion.
    Overflow past max+half-ulp gives inf (bf8) or NaN (fp8); with saturate, the max."""
    x = np.asarray(x, np.float32)
    half = len(table) // 2
    positives = table[:half].astype(np.float64)
    finite = np.isfinite(positives)
    top = int(np.flatnonzero(finite)[-1])
    values = positives[:top + 1]
    magnitude = np.abs(x.astype(np.float64))
    upper = np.clip(np.searchsorted(values, magnitude), 1, top)
    below, above = values[upper - 1], values[upper]
    pick_upper = (magnitude - below > above - magnitude) | (
        (magnitude - below == above - magnitude) & (upper % 2 == 0))
    code = np.where(pick_upper, upper, upper - 1)
    step = values[top] - values[top - 1]
    limit = values[top] + step / 2
    overflow = (magnitude > limit) | ((magnitude == limit) & (top % 2 == 1))
    code = np.where(overflow | np.isinf(magnitude), top, code)
    if not saturate:
        beyond = np.flatnonzero(~finite)
        over_code = beyond[0] if len(beyond) and np.isinf(positives[beyond[0]]) else half - 1
        code = np.where(overflow | np.isinf(magnitude), over_code, code)
    nan_code = half - 1 if len(table) == 256 else top
    code = np.where(np.isnan(magnitude), nan_code, code)
    sign = (x.view(np.uint32) >> np.uint32(31)).astype(np.int64)
    return (code | sign * half).astype(np.uint32)


def f32_to_bf16(x) -> np.ndarray:
    """float32 -> bf16 bits, round to nearest even; NaN stays a quiet NaN."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + np.uint64(0x7FFF) + (bits >> np.uint64(16) & np.uint64(1))) >> np.uint64(16)
    nan = np.isnan(np.asarray(x, np.float32))
    quiet = (bits >> np.uint64(16)) | np.uint64(0x40)
    return np.where(nan, quiet, rounded).astype(np.uint32) & np.uint32(0xFFFF)


def bf16_to_f32(bits) -> np.ndarray:
    return (np.asarray(bits, np.uint32) << np.uint32(16)).view(np.float32)


def f16_to_f32(bits) -> np.ndarray:
    return (np.asarray(bits, np.uint32) & np.uint32(0xFFFF)).astype(np.uint16).view(np.float16).astype(np.float32)


def f32_to_f16(x) -> np.ndarray:
    """float32 -> f16 bits (numpy's conversion rounds to nearest even)."""
    return np.asarray(x, np.float32).astype(np.float16).view(np.uint16).astype(np.uint32)


def fma_f32(a, b, c) -> np.ndarray:
    """a*b+c rounded once to float32. The product is exact in float64. A float64 sum can round
    twice wrongly only where it lands on a float32 tie, whose low 28 mantissa bits are clear;
    without such a lane the plain conversion is the correctly rounded result."""
    a, b, c = np.asarray(a, np.float32), np.asarray(b, np.float32), np.asarray(c, np.float32)
    product = np.multiply(a, b, dtype=np.float64)  # run_kernel runs under np.errstate(all="ignore")
    total = product + c
    if np.count_nonzero(total.view(np.uint64) & LOW28) == total.size:  # no lane can be a tie
        return total.astype(np.float32)
    return rounded_to_odd(product, c, total).astype(np.float32)


def rounded_to_odd(product, c, total):
    """The float64 sum made round-to-odd (TwoSum's error nudges an inexact even result by one
    ulp): round-to-odd at 53 bits then rounding to 24 bits is the correctly rounded result."""
    back = total - product
    error = (product - (total - back)) + (c - back)
    if not np.count_nonzero(error):  # every sum exact (decoded codes times scales often are)
        return total
    even = (total.view(np.uint64) & np.uint64(1)) == 0
    nudge = np.isfinite(total) & (error != 0) & even
    toward = np.where(error > 0, np.inf, -np.inf)
    return np.where(nudge, np.nextafter(total, toward), total)


def fma_f64(a, b, c) -> np.ndarray:
    """float64 fma through Python's exact fractions where needed (rare in our kernels)."""
    from fractions import Fraction
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
    out = np.empty(a.shape, np.float64)
    for at, (x, y, z) in enumerate(zip(a.ravel(), b.ravel(), c.ravel())):
        if np.isfinite(x) and np.isfinite(y) and np.isfinite(z):
            exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
            try:
                out.flat[at] = float(exact)
            except OverflowError:  # past the largest double: nearest-even rounds to inf
                out.flat[at] = np.inf if exact > 0 else -np.inf
        else:
            out.flat[at] = x * y + z
    return out
