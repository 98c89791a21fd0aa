"""The main loop of a gfx950 kernel's assembly, and what one iteration of it issues, per wave.

A loop is a range of instructions that ends in a branch back to an earlier label (s_branch or s_cbranch_*). The
main loop is the heaviest innermost one: no other loop inside it, MFMAs if any loop has them, then the most vector
and memory instructions. Its
instructions are counted by kind: VALU, matrix (MFMA, by name), LDS (ds_*), global / buffer loads with their bytes
per lane, stores, and scalar. Two listings are read: Triton's AMDGCN text (labels such as `.LBB0_3:`) and
llvm-objdump's disassembly of a HIP code object (branch targets as `<symbol+0x140>` after the address).
harness/estimate/kernel_model.py turns these counts into time on an MI355X.
"""
from __future__ import annotations

import collections
import dataclasses
import re

_LABEL = re.compile(r"^([.\w$]+):")
_BRANCH = re.compile(r"^s_(?:c)?branch\w*$")
_FUNCTION = re.compile(r"^([0-9a-fA-F]+) <([^>]+)>:\s*$")
_ADDRESS = re.compile(r"//\s*([0-9A-Fa-f]+):")
_TARGET = re.compile(r"<([^>+]+)\+0x([0-9a-f]+)>")
_LOAD_BYTES = {"dwordx4": 16, "dwordx3": 12, "dwordx2": 8, "dword": 4, "ubyte": 1, "sbyte": 1, "ushort": 2,
               "sshort": 2, "short": 2, "b128": 16, "b96": 12, "b64": 8, "b32": 4, "b16": 2, "b8": 1, "u8": 1,
               "i8": 1, "u16": 2, "i16": 2}
_LOADS = ("global_load", "buffer_load", "flat_load")
_STORES = ("global_store", "buffer_store", "flat_store")


@dataclasses.dataclass(frozen=True)
class Listing:
    """A kernel's instructions in order, and its backward branches as (target index, branch index)."""
    instructions: tuple
    back_edges: tuple


@dataclasses.dataclass(frozen=True)
class LoopFigures:
    """What one iteration of the main loop issues, per wave (a wave64 runs every instruction once)."""
    instructions: int
    valu: int
    matrix: dict        # MFMA name -> count; f8f6f4 ones with no fp8/bf8 operand carry the suffix " (fp4/fp6)"
    lds: int
    lds_bytes_per_lane: int
    loads: dict         # bytes per lane of one load -> count
    stores: int
    scalar: int
    other: int
    first: int          # index of the loop's first and last instruction in the listing
    last: int

    @property
    def load_bytes_per_lane(self) -> int:
        return sum(width * count for width, count in self.loads.items())

    def summary(self) -> str:
        """One line: 'loop: 236 VALU, MFMA 10x v_mfma_..., 33 LDS, loads 4x16+1x8 B/lane, 54 scalar'."""
        matrix = ", ".join(f"{n}x {name}" for name, n in sorted(self.matrix.items())) or "no MFMA"
        loads = "+".join(f"{n}x{w}" for w, n in sorted(self.loads.items(), reverse=True))
        loads = f"loads {loads} B/lane" if loads else "no memory loads"
        return f"loop per wave per iteration: {self.valu} VALU, {matrix}, {self.lds} LDS, {loads}, {self.scalar} scalar"


def _mnemonic(instruction: str) -> str:
    return instruction.split(None, 1)[0] if instruction else ""


def from_assembly(text: str) -> Listing:
    """Triton's AMDGCN (`compiled.asm['amdgcn']`): labels at column 0, instructions indented, branch operands are
    label names."""
    instructions, labels, branches = [], {}, []
    for line in text.splitlines():
        label = _LABEL.match(line)
        if label:
            labels[label.group(1)] = len(instructions)
            continue
        code = line.split(";")[0].strip()
        if not code or code.startswith(".") or not line[:1].isspace():
            continue
        if _BRANCH.match(_mnemonic(code)):
            branches.append((len(instructions), code.split()[-1]))
        instructions.append(code)
    edges = tuple((labels[target], index) for index, target in branches if labels.get(target, index + 1) <= index)
    return Listing(tuple(instructions), edges)


def from_objdump(text: str) -> dict[str, Listing]:
    """llvm-objdump -d of a code object: one Listing per function symbol; targets come from the `<sym+0x..>`
    comments, matched to the instructions' own addresses."""
    found: dict[str, tuple] = {}
    starts: dict[str, int] = {}
    current = None
    for line in text.splitlines():
        header = _FUNCTION.match(line)
        if header:
            starts[header.group(2)] = int(header.group(1), 16)
            current = found.setdefault(header.group(2), ([], {}, []))
            continue
        if current is None or not line[:1].isspace() or not line.strip():
            continue
        instructions, addresses, branches = current
        code, _, comment = line.partition("//")
        address = _ADDRESS.search("//" + comment)
        if address:
            addresses[int(address.group(1), 16)] = len(instructions)
        target = _TARGET.search(comment)
        if target and _BRANCH.match(_mnemonic(code.strip())):
            branches.append((len(instructions), target.group(1), int(target.group(2), 16)))
        instructions.append(code.strip())
    listings = {}
    for name, (instructions, addresses, branches) in found.items():
        targets = [(index, starts[symbol] + offset) for index, symbol, offset in branches if symbol in starts]
        edges = tuple((addresses[target], index) for index, target in targets
                      if target in addresses and addresses[target] <= index)
        listings[name] = Listing(tuple(instructions), edges)
    return listings


def _matrix_name(instruction: str) -> str:
    """The MFMA's name; an f8f6f4 one whose A and B formats (cbsz / blgp, 0 fp8, 1 bf8) are both fp6 or fp4 runs
    in half the passes, so it is named apart."""
    name = _mnemonic(instruction).removesuffix("_e64")
    if "f8f6f4" in name:
        formats = [int(m.group(1)) if m else 0 for m in (re.search(rf"\b{k}:(\d+)", instruction)
                                                          for k in ("cbsz", "blgp"))]
        if min(formats) >= 2:
            return f"{name} (fp4/fp6)"
    return name


def _width(mnemonic: str, default: int = 4) -> int:
    """Bytes per lane of a load or LDS access, from its name's first size word (ds_read_b64_tr_b8 moves 8 bytes,
    ds_write_b8_d16_hi 1; ds_read2_* moves two)."""
    for word in mnemonic.split("_"):
        if word in _LOAD_BYTES:
            return _LOAD_BYTES[word] * (2 if re.match(r"ds_(read|write)2", mnemonic) else 1)
    return default


def count(instructions) -> dict:
    """Instruction counts by kind over a sequence of instructions (the fields of LoopFigures)."""
    kinds = collections.Counter()
    matrix, loads = collections.Counter(), collections.Counter()
    lds_bytes = 0
    for instruction in instructions:
        name = _mnemonic(instruction)
        if name.startswith(("v_mfma", "v_smfmac")):
            matrix[_matrix_name(instruction)] += 1
        elif name.startswith("v_"):
            kinds["valu"] += 1
        elif name.startswith("ds_"):
            kinds["lds"] += 1
            lds_bytes += _width(name)
        elif name.startswith(_LOADS):
            loads[_width(name)] += 1
        elif name.startswith(_STORES):
            kinds["stores"] += 1
        elif name.startswith("s_"):
            kinds["scalar"] += 1
        else:
            kinds["other"] += 1
    return {"instructions": len(instructions), "valu": kinds["valu"], "matrix": dict(matrix), "lds": kinds["lds"],
            "lds_bytes_per_lane": lds_bytes, "loads": dict(loads), "stores": kinds["stores"],
            "scalar": kinds["scalar"], "other": kinds["other"]}


def _weight(figures: dict) -> tuple:
    """Loops with matrix instructions first (a fused epilogue's merge loop is not the kernel's main loop), then the
    most vector and memory instructions."""
    return (bool(figures["matrix"]), figures["valu"] + sum(figures["matrix"].values()) + figures["lds"]
            + sum(figures["loads"].values()))


def main_loop(listing: Listing) -> LoopFigures | None:
    """The heaviest innermost loop of a listing (None when it has no backward branch)."""
    spans: dict[int, int] = {}
    for target, branch in listing.back_edges:  # a rotated loop branches back to its head more than once
        spans[target] = max(branch, spans.get(target, branch))
    loops = sorted(spans.items())
    innermost = [(first, last) for first, last in loops
                 if not any((f, l) != (first, last) and first <= f and l <= last for f, l in loops)]
    best = None
    for first, last in innermost:
        figures = count(listing.instructions[first:last + 1])
        if best is None or _weight(figures) > _weight(best[0]):
            best = (figures, first, last)
    if best is None:
        return None
    figures, first, last = best
    return LoopFigures(first=first, last=last, **figures)
