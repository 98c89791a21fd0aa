"""What each gfx950 instruction of a trace costs the timing model (gfx950_timeline.py): its SIMD issue
category and cycles, MFMA passes on the XDL unit, the s_waitcnt counter it counts on and the latency it
completes after, the bytes it moves, the counts an s_waitcnt waits down to, s_barrier; and which
instructions read the VGPRs the one before them wrote (a dependent VALU op waits for its result)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

VALU, SALU, VMEM, LDS, BRANCH = range(5)  # a SIMD's issue categories, one instruction each a visit
CATEGORY_NAMES = ("VALU", "SALU", "VMEM", "LDS", "branch")
VM, LGKM, EXP = range(3)  # s_waitcnt's counters
COUNTERS = ("vmcnt", "lgkmcnt", "expcnt")
COUNTER_MAX = (63, 15, 7)  # a count at its field's maximum waits for nothing
NO_WAIT = 1 << 30
MEMORY, LDS_LATENCY = 0, 1  # which latency an op completes after
TRANSCENDENTAL = re.compile(r"v_(exp|log|rcp|rsq|sqrt|sin|cos)_")
FP8_FORMATS = (0, 1)  # cbsz / blgp values of fp8 and bf8 (absent: 0)
VGPR = re.compile(r"(?<![\w\[])v(?:(\d+)|\[(\d+):(\d+)\])")  # v7 or v[4:7]; not acc or SGPR names


@dataclass
class InstructionTable:
    """Per instruction index of a trace: its costs and roles, as numpy arrays."""
    category: np.ndarray     # VALU..BRANCH
    simd: np.ndarray         # cycles it holds its category's issue on the SIMD (an LDS op: its bytes, per step)
    xdl: np.ndarray          # MFMA cycles on the XDL unit
    counter: np.ndarray      # VM, LGKM, EXP or -1
    latency: np.ndarray      # MEMORY or LDS_LATENCY
    width: np.ndarray        # bytes per active lane (scalar: the whole op)
    per_lane: np.ndarray     # bytes scale with the active lanes
    hbm: np.ndarray          # its bytes come from / go to memory
    lds: np.ndarray          # its bytes pass the LDS
    waits: np.ndarray        # (n, 3) s_waitcnt counts; NO_WAIT where it waits for nothing
    barrier: np.ndarray
    by_shape: list = field(default_factory=list)   # MFMAs priced by tile shape
    unknown: list = field(default_factory=list)    # mnemonics priced as one issue slot
    writes: dict = field(default_factory=dict)     # VALU (not MFMA) index -> the VGPRs it writes (first, last)
    reads: dict = field(default_factory=dict)      # VALU or MFMA index -> the VGPR ranges it reads

    def reads_what_wrote(self, before: int, after: int) -> bool:
        """Does instruction `after` read a VGPR that `before` (a VALU op) wrote?"""
        first, last = self.writes.get(before, (1, 0))
        return any(lo <= last and first <= hi for lo, hi in self.reads.get(after, ()))


def vgpr_ranges(operands: str) -> list[tuple[int, int]]:
    """The VGPR ranges an instruction names; first the one it writes, or (-1, -1) where it writes none
    (its first operand an SGPR, VCC or AGPR)."""
    named = [(int(one), int(one)) if one else (int(lo), int(hi)) for one, lo, hi in VGPR.findall(operands)]
    return named if VGPR.match(operands.strip()) else [(-1, -1)] + named


def reads_previous(steps: np.ndarray, t: InstructionTable) -> np.ndarray:
    """Per step: it reads a VGPR the step before it wrote (by instruction pair, each pair judged once)."""
    found = np.zeros(len(steps), bool)
    if len(steps) > 1 and t.writes:
        n = len(t.category)
        pairs, where = np.unique(steps[:-1].astype(np.int64) * n + steps[1:], return_inverse=True)
        found[1:] = np.array([t.reads_what_wrote(int(p // n), int(p % n)) for p in pairs])[where]
    return found


def operand_width(mnemonic: str) -> int:
    """Bytes per lane a memory mnemonic moves (a scalar load: its dwords; default a dword)."""
    found = re.search(r"dwordx(\d+)", mnemonic)
    if found:
        return 4 * int(found.group(1))
    found = re.search(r"_b(\d+)", mnemonic)
    pairs = 2 if re.match(r"ds_(read|write|load|store)2", mnemonic) else 1
    if found:
        return pairs * int(found.group(1)) // 8
    if re.search(r"byte|_[ui]8", mnemonic):
        return 1
    if re.search(r"short|_[ui]16", mnemonic):
        return 2
    found = re.search(r"format_([xyzw]+)", mnemonic)
    if found:
        return len(found.group(1)) * (2 if "d16" in mnemonic else 4)
    return pairs * (8 if re.search(r"_x2|64", mnemonic) else 4)


def waitcnt_counts(operands: str) -> tuple[int, int, int]:
    """(vmcnt, lgkmcnt, expcnt) an s_waitcnt waits down to; NO_WAIT for a counter it leaves."""
    named = dict(re.findall(r"(vmcnt|lgkmcnt|expcnt)\((\d+)\)", operands))
    if not named and re.fullmatch(r"\s*(0x[0-9a-fA-F]+|\d+)\s*", operands):
        raw = int(operands, 0)  # gfx9 simm16: vmcnt [3:0]+[15:14], expcnt [6:4], lgkmcnt [11:8]
        named = {"vmcnt": (raw & 15) | (raw >> 14 & 3) << 4, "expcnt": raw >> 4 & 7,
                 "lgkmcnt": raw >> 8 & 15}
    counts = []
    for name, top in zip(COUNTERS, COUNTER_MAX):
        value = int(named.get(name, top))
        counts.append(NO_WAIT if value >= top else value)
    return tuple(counts)


def mfma_passes(mnemonic: str, operands: str, figures) -> tuple[float, bool]:
    """(passes, priced by tile shape) of an MFMA on gfx950 (figures: gfx950_timeline.Figures)."""
    passes = figures.tables["mfma_passes"].get(mnemonic)
    if passes is not None:
        if "f8f6f4" in mnemonic:  # A's format in cbsz, B's in blgp; absent: fp8
            formats = [int(re.search(rf"{key}:(\d+)", operands + f" {key}:0").group(1))
                       for key in ("cbsz", "blgp")]
            if not any(f in FP8_FORMATS for f in formats):
                passes *= figures["f8f6f4_fp4_fp6_rate"]
        return float(passes), False
    shapes = figures.tables["mfma_passes_by_shape"]
    tile = re.search(r"_(\d+x\d+)x", mnemonic)
    return float(shapes.get(tile.group(1) if tile else "", max(shapes.values()))), True


def classify(instructions: list, figures) -> InstructionTable:
    n = len(instructions)
    t = InstructionTable(np.full(n, BRANCH, np.int8), np.full(n, figures["issue_interval_cycles"]),
                         np.zeros(n), np.full(n, -1, np.int8), np.zeros(n, np.int8), np.zeros(n),
                         np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool),
                         np.full((n, 3), NO_WAIT, np.int64), np.zeros(n, bool))
    valu, cycle = figures["valu_cycles"], figures["mfma_pass_cycles"]
    for i, (m, operands) in enumerate(instructions):
        if m.startswith(("v_mfma", "v_smfmac")):
            passes, guessed = mfma_passes(m, operands, figures)
            t.category[i], t.xdl[i], t.reads[i] = VALU, passes * cycle, vgpr_ranges(operands)[1:]
            t.simd[i] = min(passes, figures["mfma_valu_block_passes"]) * cycle
            if guessed:
                t.by_shape.append(m)
        elif m.startswith("v_"):
            t.category[i] = VALU
            t.simd[i] = valu * (figures["trans_rate"] if TRANSCENDENTAL.match(m) else 1)
            ranges = vgpr_ranges(operands) or [(-1, -1)]
            t.reads[i] = ranges[1:]
            if ranges[0][0] >= 0:
                t.writes[i] = ranges[0]
        elif m == "s_waitcnt":
            t.waits[i] = waitcnt_counts(operands)
        elif m == "s_barrier":
            t.barrier[i] = True
        elif m == "s_nop":
            wait_states = re.search(r"(0x[0-9a-fA-F]+|\d+)", operands)
            t.simd[i] = max(t.simd[i], int(wait_states.group(1), 0) + 1 if wait_states else 1)
        elif m.startswith(("s_load", "s_buffer_load", "s_store", "s_buffer_store", "s_scratch",
                           "s_atomic", "s_buffer_atomic", "s_memtime", "s_memrealtime")):
            t.category[i], t.counter[i] = SALU, LGKM
            t.hbm[i] = "mem" not in m
            t.width[i] = operand_width(m) if t.hbm[i] else 0
        elif m.startswith(("s_branch", "s_cbranch", "s_setpc", "s_swappc", "s_endpgm", "s_sleep",
                           "s_setprio", "s_trap", "s_icache", "s_dcache", "s_sendmsg", "s_getpc")):
            pass
        elif m.startswith("s_"):
            t.category[i] = SALU
        elif m.startswith("ds_"):
            t.category[i], t.counter[i], t.latency[i] = LDS, LGKM, LDS_LATENCY
            t.width[i], t.per_lane[i], t.lds[i] = operand_width(m), True, True
        elif m.startswith(("global_", "flat_", "buffer_", "scratch_", "tbuffer_")):
            t.category[i], t.counter[i], t.per_lane[i] = VMEM, VM, True
            t.hbm[i] = re.search(r"_inv|_wb", m) is None  # cache maintenance moves no data
            t.width[i] = operand_width(m) if t.hbm[i] else 0
            t.lds[i] = "_lds_" in m or re.search(r"\blds\b", operands) is not None  # LDS-DMA
        elif m.startswith("exp"):
            t.category[i], t.counter[i] = VMEM, EXP
        else:
            t.unknown.append(m)
    return t
