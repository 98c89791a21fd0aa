"""Operand text ('v[4:5]', 's3', 'vcc', '-|v1|', '0.5', '0x3f000001') as readers and writers."""
import re
import struct
from dataclasses import dataclass

import numpy as np

from .errors import NotEmulated
from .wave import EXEC, FULL, LANES, M0, MASK_CACHE, VCC, VGPR_FILE, lane_mask, lanes64, mask_bits

REGISTER = re.compile(r"^([vsa])(\d+)$|^([vsa])\[(\d+):(\d+)\]$|^ttmp(\d+)$|^ttmp\[(\d+):(\d+)\]$")
NAMED = {"vcc": (VCC, 2), "vcc_lo": (VCC, 1), "vcc_hi": (VCC + 1, 1), "exec": (EXEC, 2),
         "exec_lo": (EXEC, 1), "exec_hi": (EXEC + 1, 1), "m0": (M0, 1),
         "flat_scratch": (102, 2), "flat_scratch_lo": (102, 1), "flat_scratch_hi": (103, 1),
         "xnack_mask": (104, 2), "xnack_mask_lo": (104, 1), "xnack_mask_hi": (105, 1)}
# Flat-address apertures of our own choosing: above the 47-bit user space, so no host address hits them.
SHARED_APERTURE = 0x1 << 48
PRIVATE_APERTURE = 0x2 << 48
APERTURES = {"src_shared_base": SHARED_APERTURE, "src_shared_limit": SHARED_APERTURE + 0xFFFFFFFF,
             "src_private_base": PRIVATE_APERTURE,
             "src_private_limit": PRIVATE_APERTURE + 0xFFFFFFFF}
INV_2PI = {16: 0x3118, 32: 0x3E22F983, 64: 0x3FC45F306DC9C882}
FLOAT_CODES = {16: "<e", 32: "<f", 64: "<d"}
SIGN = {16: 0x8000, 32: 0x80000000, 64: 0x8000000000000000}
MASKS = {16: 0xFFFF, 32: 0xFFFFFFFF, 64: 0xFFFFFFFFFFFFFFFF}


@dataclass
class Operand:
    kind: str  # 'v' (VGPR or AGPR row), 's', 'scc', 'const', 'null', 'vccz', 'execz'
    index: int = 0
    count: int = 1
    value: float | int | None = None
    text: str = ""
    neg: bool = False
    abs: bool = False
    sext: bool = False


def parse(text: str) -> Operand:
    original, neg, absolute, sext = text, False, False, False
    if text.startswith("neg(") and text.endswith(")"):
        neg, text = True, text[4:-1]
    if text.startswith("sext(") and text.endswith(")"):
        sext, text = True, text[5:-1]
    if text.startswith("-") and not is_number(text):
        neg, text = True, text[1:]
    if text.startswith("abs(") and text.endswith(")"):
        absolute, text = True, text[4:-1]
    if text.startswith("|") and text.endswith("|"):
        absolute, text = True, text[1:-1]
    operand = parse_plain(text, original)
    operand.neg, operand.abs, operand.sext = neg, absolute, sext
    return operand


def is_number(text: str) -> bool:
    try:
        float(text) if "." in text else int(text, 0)
        return True
    except ValueError:
        return False


def parse_plain(text: str, original: str) -> Operand:
    found = REGISTER.match(text)
    if found:
        return register(found, original)
    if text in NAMED:
        index, count = NAMED[text]
        return Operand("s", index, count, text=original)
    if text in ("scc", "src_scc"):
        return Operand("scc", text=original)
    if text in ("src_vccz", "src_execz"):
        return Operand(text[4:], text=original)
    if text in ("off", "null"):
        return Operand("null", text=original)
    if text in APERTURES:
        return Operand("const", value=APERTURES[text], text=original)
    if text.startswith("lit(") and text.endswith(")"):
        text = text[4:-1]
    if is_number(text):
        value = float(text) if "." in text else int(text, 0)
        return Operand("const", value=value, text=original)
    raise NotEmulated(f"operand {original}")


def register(found: re.Match, original: str) -> Operand:
    single, index, ranged, first, last, ttmp, ttmp_first, ttmp_last = found.groups()
    if ttmp is not None or ttmp_first is not None:
        start = int(ttmp if ttmp is not None else ttmp_first)
        end = int(ttmp if ttmp is not None else ttmp_last)
        return Operand("s", 108 + start, end - start + 1, text=original)
    letter = single or ranged
    start = int(index if single else first)
    count = 1 if single else int(last) - start + 1
    if letter == "s":
        return Operand("s", start, count, text=original)
    return Operand("v", start + (VGPR_FILE if letter == "a" else 0), count, text=original)


def constant_bits(operand: Operand, width: int, is_float: bool) -> int:
    value = operand.value
    if isinstance(value, float):
        if abs(value - 0.15915494) < 1e-7:
            return INV_2PI[width]
        packed = struct.pack(FLOAT_CODES[width], value)
        return int.from_bytes(packed, "little")
    if width == 64 and is_float and value > 64 and value not in APERTURES.values():
        return (value & 0xFFFFFFFF) << 32  # a 32-bit literal is the high half of an f64
    return value & MASKS[width]


def apply_modifiers(raw, operand: Operand, width: int):
    """Float abs/neg as the hardware applies them: on the sign bit."""
    kind = raw.dtype.type
    if operand.abs:
        raw = raw & kind(MASKS[width] ^ SIGN[width])
    if operand.neg:
        raw = raw ^ kind(SIGN[width])
    return raw


def vector_reader(operand: Operand, width: int = 32, is_float: bool = False):
    """fn(wave) -> the operand per lane: uint32 (16- and 32-bit) or uint64 (64-bit)."""
    plain = plain_vector_reader(operand, width, is_float)
    if not (operand.neg or operand.abs):
        return plain
    bits = 16 if width == 16 else width
    return lambda w: apply_modifiers(plain(w), operand, bits)


def plain_vector_reader(operand: Operand, width: int, is_float: bool):
    kind, index = operand.kind, operand.index
    if kind == "const":
        bits = constant_bits(operand, 16 if width == 16 else width, is_float)
        value = np.uint64(bits) if width == 64 else np.uint32(bits)
        return lambda w: value
    if width == 64:
        if kind == "v":  # the pair's two rows side by side are the lanes' 64-bit values
            return lambda w: np.ascontiguousarray(w.v[index:index + 2].T).view(np.uint64)[:, 0]
        if kind == "s":
            return lambda w: np.uint64(w.s[index] | w.s[index + 1] << 32)
    elif kind == "v":
        return lambda w: w.v[index]
    elif kind == "s":
        return lambda w: np.uint32(w.s[index])
    if kind == "scc":
        return lambda w: np.uint32(w.scc)
    if kind in ("vccz", "execz"):
        at = VCC if kind == "vccz" else EXEC
        return lambda w: np.uint32(w.s[at] == 0 and w.s[at + 1] == 0)
    raise NotEmulated(f"operand {operand.text}")


def scalar_reader(operand: Operand, width: int = 32, is_float: bool = False):
    """fn(wave) -> the operand as a Python int (SALU, SMEM, descriptors)."""
    kind, index = operand.kind, operand.index
    if kind == "const":
        bits = constant_bits(operand, width, is_float)
        return lambda w: bits
    if kind == "s":
        if width == 64:
            return lambda w: w.s[index] | w.s[index + 1] << 32
        return lambda w: w.s[index]
    if kind == "scc":
        return lambda w: w.scc
    if kind == "null":
        return lambda w: 0
    if kind in ("vccz", "execz"):
        at = VCC if kind == "vccz" else EXEC
        return lambda w: int(w.s[at] == 0 and w.s[at + 1] == 0)
    raise NotEmulated(f"scalar operand {operand.text}")


def scalar_writer(operand: Operand, width: int = 32):
    """fn(wave, int): writes an SGPR (pair) or special register; null drops it."""
    kind, index = operand.kind, operand.index
    if kind == "null":
        return lambda w, value: None
    if kind != "s":
        raise NotEmulated(f"scalar destination {operand.text}")
    if width == 64:
        def write64(w, value):
            w.s[index] = value & 0xFFFFFFFF
            w.s[index + 1] = value >> 32 & 0xFFFFFFFF
        return write64

    def write32(w, value):
        w.s[index] = value & 0xFFFFFFFF
    return write32


def full_exec(w) -> bool:
    return w.s[EXEC] == FULL and w.s[EXEC + 1] == FULL


ALL_LANES = slice(None)


def active_lanes(w):
    """An index of the lanes under EXEC: a slice when all are (cheaper than a boolean mask)."""
    return ALL_LANES if full_exec(w) else w.exec_mask()


def write_rows(w, index: int, rows, mask=None) -> None:
    """Writes rows [n, 64] (or one row) into VGPRs from index, lanes under EXEC (or mask)."""
    target = w.v[index:index + len(rows)] if rows.ndim == 2 else w.v[index]
    if mask is None and full_exec(w):
        target[...] = rows
    else:
        np.copyto(target, rows, where=w.exec_mask() if mask is None else mask)


def write_pair(w, index: int, low, high) -> None:
    """Writes uint32 lanes low and high into VGPRs index and index + 1 under EXEC."""
    s = w.s
    if s[EXEC] == FULL and s[EXEC + 1] == FULL:
        w.v[index][...] = low
        w.v[index + 1][...] = high
        return
    mask = w.exec_mask()
    np.copyto(w.v[index], low, where=mask)
    np.copyto(w.v[index + 1], high, where=mask)


def vector_writer(operand: Operand, width: int = 32):
    """fn(wave, raw): writes the per-lane result under EXEC (64-bit results to a pair)."""
    if operand.kind == "s":
        return sgpr_from_lane_writer(operand)
    if operand.kind != "v":
        raise NotEmulated(f"vector destination {operand.text}")
    index = operand.index
    if width == 64:
        def write64(w, raw, mask=None):
            raw = np.ascontiguousarray(lanes64(np.asarray(raw, np.uint64)))
            write_rows(w, index, raw.view(np.uint32).reshape(LANES, 2).T, mask)  # low dword first
        return write64

    def write32(w, raw, mask=None):
        s = w.s
        if mask is None and s[EXEC] == FULL and s[EXEC + 1] == FULL:
            w.v[index][...] = raw  # the same C cast as astype(np.uint32)
            return
        write_rows(w, index, np.asarray(raw).astype(np.uint32, copy=False), mask)
    return write32


def sgpr_from_lane_writer(operand: Operand):
    """A VOP3 result written to an SGPR (v_readfirstlane-like forms): the first active lane."""
    index = operand.index

    def write(w, raw, mask=None):
        lanes = np.flatnonzero(w.exec_mask())
        first = int(lanes64(raw)[lanes[0] if len(lanes) else 0])
        w.s[index] = first & 0xFFFFFFFF
    return write


def lane_mask_writer(operand: Operand):
    """fn(wave, bool lanes): a VOPC / carry-out result, 0 in inactive lanes."""
    if operand.kind == "null":
        return lambda w, lanes: None
    index = operand.index

    pair = operand.count == 2

    def write(w, lanes):
        s = w.s
        lanes = lanes64(lanes)
        if s[EXEC] != FULL or s[EXEC + 1] != FULL:
            lanes = lanes & w.exec_mask()
        bits = mask_bits(lanes)
        s[index] = bits & 0xFFFFFFFF
        if pair:
            s[index + 1] = bits >> 32
    return write


def lane_mask_reader(operand: Operand):
    """fn(wave) -> bool lanes of a 64-bit SGPR mask (carry-in, v_cndmask's select)."""
    if operand.kind == "const":
        bits = operand.value & MASKS[64]
        return lambda w: lane_mask(bits)
    index = operand.index

    def read(w):
        bits = w.s[index] | w.s[index + 1] << 32
        mask = MASK_CACHE.get(bits)
        return lane_mask(bits) if mask is None else mask
    return read
