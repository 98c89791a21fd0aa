"""VGPR indexing mode: `s_set_gpr_idx_on S0, gpr_idx(SRC0|SRC1|SRC2|DST)` ... `s_set_gpr_idx_off`.

Per AMD's CDNA pseudocode: s_set_gpr_idx_on sets the mode, M0[7:0] = S0[7:0] and M0[15:12] = the raw 4-bit S1 field
(bit 0 SRC0, 1 SRC1, 2 SRC2, 3 DST; the other bits of M0 are kept); while the mode is on, each VALU adds M0[7:0] to the
VGPR number of its enabled operands (SGPR and constant operands are not moved); s_set_gpr_idx_off ends it.
Executed here as one region: the on instruction runs the VALUs up to the off instruction with their VGPR operands
renumbered (executors built per index value and cached) and continues at the off (a no-op). A region holding
anything but VOP1/VOP2/VOP3 ops of `valu_ops.OPS` (no DPP/SDWA) or SALU, or s_set_gpr_idx_mode/_idx inside it, is
not emulated. The executor passes in how to build and classify the region's members, so this
module never imports it (no import circle)."""
import re

from .errors import EmulationFault, NotEmulated
from .operands import parse, scalar_reader
from .valu import base_name
from .valu_ops import OPS
from .wave import M0

MODE_BITS = {"SRC0": 1, "SRC1": 2, "SRC2": 4, "DST": 8}
VGPR_TEXT = re.compile(r"(?<![a-z_])v(\d+)\b|(?<![a-z_])v\[(\d+):(\d+)\]")
ARCH_VGPRS = 256


def shifted(text: str, by: int) -> str:
    """Operand text with its VGPR number(s) moved by `by` (modifiers such as -|v1| kept)."""
    def move(found):
        if found.group(1) is not None:
            return f"v{int(found.group(1)) + by}"
        return f"v[{int(found.group(2)) + by}:{int(found.group(3)) + by}]"
    return VGPR_TEXT.sub(move, text, count=1)


def region_member(ins, plain) -> str:
    """'valu' or 'salu' for an instruction the region may hold; NotEmulated otherwise."""
    mnemonic = ins.mnemonic
    if mnemonic.startswith("v_") and base_name(mnemonic) in OPS \
            and not mnemonic.endswith(("_dpp", "_sdwa")) and not mnemonic.startswith(("v_cmp", "v_readlane")):
        return "valu"
    if mnemonic.startswith("s_") and plain(ins) and "gpr_idx" not in mnemonic:
        return "salu"
    raise NotEmulated("s_set_gpr_idx_on", detail=f"{mnemonic} inside the indexed region")


def build(ins, program, index, build_member, plain):
    """The region's executor; build_member(ins, program, index) and plain(ins) are the executor's."""
    mode = (ins.words[0] >> 8) & 0xF
    read_index = scalar_reader(parse(ins.operands[0]))
    instructions = program.instructions
    end = index + 1
    while end < len(instructions) and instructions[end].mnemonic != "s_set_gpr_idx_off":
        region_member(instructions[end], plain)
        end += 1
    if end == len(instructions):
        raise NotEmulated("s_set_gpr_idx_on", detail="no s_set_gpr_idx_off after it")
    members = list(range(index + 1, end))
    kinds = [region_member(instructions[j], plain) for j in members]
    built: dict[int, tuple] = {}

    def renumbered(j, kind, by):
        original = instructions[j]
        if kind == "salu" or by == 0:
            return build_member(original, program, j)
        operands = list(original.operands)
        positions = [k for bit, k in ((8, 0), (1, 1), (2, 2), (4, 3)) if mode & bit and k < len(operands)]
        for k in positions:
            moved = shifted(operands[k], by)
            operand = parse(moved)
            if moved != operands[k] and operand.index + operand.count > ARCH_VGPRS:
                raise EmulationFault("gpr index", f"{original.mnemonic} operand {operands[k]} + M0 index {by} "
                                     f"is past v{ARCH_VGPRS - 1}")
            operands[k] = moved
        copy = type(original)(**{**original.__dict__, "operands": operands})
        return build_member(copy, program, j)

    def run(w):
        by = int(read_index(w)) & 0xFF
        w.s[M0] = (int(w.s[M0]) & ~0xF0FF & 0xFFFFFFFF) | by | (mode << 12)
        executors = built.get(by)
        if executors is None:
            executors = built[by] = tuple(renumbered(j, kind, by) for j, kind in zip(members, kinds))
        for run_member in executors:
            run_member(w)
        w.skipped += len(executors)  # counted as run; the spans entry spreads the hits to each of them
        return end
    run.span_end = end
    return run
