"""DPP (data-parallel primitives) lane selection and SDWA sub-dword selection for VOP1/VOP2."""
import numpy as np

from .errors import NotEmulated
from .wave import lanes64

LANE = np.arange(64)
ROW_LANE = LANE % 16
SDWA_SELECT = {"BYTE_0": (0, 8), "BYTE_1": (8, 8), "BYTE_2": (16, 8), "BYTE_3": (24, 8),
               "WORD_0": (0, 16), "WORD_1": (16, 16), "DWORD": (0, 32)}


def source_lanes(modifiers: dict[str, str]) -> np.ndarray:
    """For each lane, the lane src0 is read from (-1: out of range)."""
    if "quad_perm" in modifiers:
        order = [int(x) for x in modifiers["quad_perm"].strip("[]").split(",")]
        return LANE - LANE % 4 + np.array(order)[LANE % 4]
    for key, shift in (("row_shl", 1), ("row_shr", -1), ("row_ror", 0)):
        if key in modifiers:
            n = int(modifiers[key], 0)
            if key == "row_ror":
                return LANE - ROW_LANE + (ROW_LANE + n) % 16
            moved = ROW_LANE + shift * n
            return np.where((moved >= 0) & (moved < 16), LANE - ROW_LANE + moved, -1)
    for key, step, wrap in (("wave_shl", 1, False), ("wave_shr", -1, False),
                            ("wave_rol", 1, True), ("wave_ror", -1, True)):
        if key in modifiers:
            moved = LANE + step
            return moved % 64 if wrap else np.where((moved >= 0) & (moved < 64), moved, -1)
    if "row_mirror" in modifiers:
        return LANE - ROW_LANE + 15 - ROW_LANE
    if "row_half_mirror" in modifiers:
        return LANE - LANE % 8 + 7 - LANE % 8
    if "row_bcast" in modifiers:
        which = int(modifiers["row_bcast"])
        row = LANE // 16
        if which == 15:
            return np.where(row >= 1, 16 * row - 1, -1)
        return np.where(row >= 2, 31, -1)
    if "row_newbcast" in modifiers:
        return LANE - ROW_LANE + int(modifiers["row_newbcast"], 0)
    raise NotEmulated("dpp control " + " ".join(sorted(modifiers)))


def dpp_masks(modifiers: dict[str, str]) -> tuple[np.ndarray, np.ndarray, bool]:
    """(source lanes clipped to 0..63, lanes the row/bank masks let write, bound_ctrl)."""
    lanes = source_lanes(modifiers)
    row_mask = int(modifiers.get("row_mask", "0xf"), 0)
    bank_mask = int(modifiers.get("bank_mask", "0xf"), 0)
    enabled = ((row_mask >> (LANE // 16)) & 1).astype(bool) & ((bank_mask >> (LANE // 4 % 4)) & 1).astype(bool)
    bound_zero = "bound_ctrl" in modifiers
    return lanes, enabled, bound_zero


def dpp_source(read, modifiers):
    """Wraps src0's reader with the DPP permutation; returns (reader, write-mask fn)."""
    lanes, enabled, bound_zero = dpp_masks(modifiers)
    valid_static = lanes >= 0
    safe = np.where(valid_static, lanes, 0)

    def valid_lanes(w):
        source_on = w.exec_mask()[safe] & valid_static
        return source_on

    def reader(w):
        values = lanes64(read(w))[safe]
        if bound_zero:
            values = np.where(valid_lanes(w), values, values.dtype.type(0))
        return values

    def write_mask(w):
        mask = w.exec_mask() & enabled
        return mask if bound_zero else mask & valid_lanes(w)
    return reader, write_mask


def sdwa_source(read, selector: str, sign_extend: bool):
    """src_sel: the chosen byte or word, zero- or sign-extended to 32 bits."""
    shift, width = SDWA_SELECT[selector]
    if width == 32:
        return read
    mask, top = (1 << width) - 1, 1 << (width - 1)

    def reader(w):
        field = (np.asarray(read(w)).astype(np.uint32) >> np.uint32(shift)) & np.uint32(mask)
        if sign_extend:
            return ((field ^ np.uint32(top)) - np.uint32(top)).astype(np.uint32)
        return field
    return reader


def sdwa_merge(selector: str, unused: str):
    """fn(new, old) -> the destination dword of an SDWA write (dst_sel, dst_unused)."""
    shift, width = SDWA_SELECT[selector]
    if width == 32:
        return lambda new, old: new
    field = np.uint32(((1 << width) - 1) << shift)

    def merge(new, old):
        placed = (np.asarray(new).astype(np.uint32) << np.uint32(shift)) & field
        if unused == "UNUSED_PRESERVE":
            return placed | (old & ~field)
        if unused == "UNUSED_SEXT":
            top = (placed >> np.uint32(shift + width - 1)) & np.uint32(1)
            high = np.uint32(0xFFFFFFFF) << np.uint32(shift + width) if shift + width < 32 else np.uint32(0)
            return placed | np.where(top == 1, high, np.uint32(0))
        return placed
    return merge
