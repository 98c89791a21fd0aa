"""One cached executor per instruction, built on first reach (so an instruction we lack stops
the run only when a wave gets there). Its family comes from the opcode table FAMILIES: rows of
(encoding, family, claims, builder) as an ISA guide lists its opcode tables. Within an encoding
no two rows claim one mnemonic (`build` checks it, tests/emulator/test_dispatch.py asserts it
for every mnemonic the tables know), so the rows' order never matters."""
from dataclasses import dataclass
from typing import Callable

from . import (buffer, ds, gpr_idx, matrix, salu, scratch, smem, sopp, valu, valu_forms,
               valu_packed, vcmp, vmem)
from .errors import NotEmulated
from .valu_ops import OPS

SMEM_PREFIXES = ("load_dword", "buffer_load_dword", "memtime", "memrealtime")
MATRIX_PREFIXES = ("mfma_", "smfmac_", "accvgpr_", "permlane", "cvt_scalef32")
TRANSPOSED_READ = "read_b64_tr"
# Families whose instructions never jump, fault or touch memory (a block may run them in a row).
ALU_FAMILIES = {"salu", "valu", "valu_forms", "valu_packed", "vcmp"}


@dataclass(frozen=True)
class Family:
    """One row: `claims(name)` on the name after the encoding's prefix (v_: without
    _e32/_e64/_dpp/_sdwa); `builder(ins, name, program, index)` -> the executor."""
    encoding: str
    name: str
    claims: Callable[[str], bool]
    builder: Callable


def starts(prefixes):
    return lambda name: name.startswith(prefixes)


def every(name: str) -> bool:
    return True


def by_name(build_family):
    """A row's builder for a family that needs only the instruction and its name."""
    return lambda ins, name, program, index: build_family(ins, name)


def indexed_region(ins, name, program, index):
    return gpr_idx.build(ins, program, index, build, plain)


def special_form(ins, name, program, index):
    return valu_forms.FORMS[name](ins)


def memory(kind: str):
    return lambda ins, name, program, index: vmem.build(ins, name, kind)


FAMILIES = (
    #      encoding  family        claims                                      builder
    Family("s", "smem", starts(SMEM_PREFIXES), by_name(smem.build)),
    Family("s", "gpr_idx", lambda name: name == "set_gpr_idx_on", indexed_region),
    Family("s", "salu", salu.knows, by_name(salu.build)),
    Family("s", "sopp", sopp.knows, sopp.build),
    Family("v", "vcmp", starts(("cmp_", "cmpx_")), by_name(vcmp.build)),
    Family("v", "valu_forms", valu_forms.FORMS.__contains__, special_form),
    Family("v", "matrix", starts(MATRIX_PREFIXES), by_name(matrix.build)),
    Family("v", "valu_packed", valu_packed.knows, by_name(valu_packed.build)),
    Family("v", "valu", OPS.__contains__, by_name(valu.build)),
    Family("ds", "matrix", starts(TRANSPOSED_READ), by_name(matrix.build)),
    Family("ds", "ds", lambda name: not name.startswith(TRANSPOSED_READ), by_name(ds.build)),
    Family("global", "vmem", every, memory("global")),
    Family("flat", "vmem", every, memory("flat")),
    Family("buffer", "buffer", every, by_name(buffer.build)),
    Family("scratch", "scratch", every, by_name(scratch.build)),
)
BY_ENCODING: dict[str, tuple[Family, ...]] = {}
for row in FAMILIES:
    BY_ENCODING[row.encoding] = BY_ENCODING.get(row.encoding, ()) + (row,)


def split_mnemonic(mnemonic: str) -> tuple[str, str]:
    """'v_add_f32_e64' -> ('v', 'add_f32'); 'global_load_dword' -> ('global', 'load_dword')."""
    encoding, _, name = mnemonic.partition("_")
    return encoding, valu.base_name(mnemonic) if encoding == "v" else name


def claimants(mnemonic: str) -> list[Family]:
    """Every row that claims the mnemonic (one, or none for an instruction we lack)."""
    encoding, name = split_mnemonic(mnemonic)
    return [row for row in BY_ENCODING.get(encoding, ()) if row.claims(name)]


def family_of(mnemonic: str) -> str | None:
    rows = claimants(mnemonic)
    return rows[0].name if len(rows) == 1 else None


def build(ins, program, index):
    """The executor fn(wave) -> None (next), an instruction index, or a sopp code (< 0)."""
    rows = claimants(ins.mnemonic)
    if not rows:
        raise NotEmulated(ins.mnemonic)
    if len(rows) > 1:  # a table bug, never a kernel's: the test over every mnemonic catches it
        raise LookupError(f"{ins.mnemonic} is claimed by {[row.name for row in rows]}")
    return rows[0].builder(ins, split_mnemonic(ins.mnemonic)[1], program, index)


def plain(ins) -> bool:
    """An ALU instruction or a no-op: it never jumps, never faults at run time, touches no memory."""
    mnemonic = ins.mnemonic
    if mnemonic == "s_nop" or mnemonic.startswith("s_waitcnt"):
        return True
    return family_of(mnemonic) in ALU_FAMILIES and not mnemonic.startswith("v_cmpx_")


class Executors:
    """The executors of one program, built lazily and kept for every later launch. Entered at a
    plain instruction followed by more, the table runs them all as one block (fewer dispatches);
    `spans` keeps each block's end so that every instruction's hits can be counted."""

    def __init__(self, program):
        self.program = program
        self.table = [self.lazy(i) for i in range(len(program.instructions))]
        self.spans: dict[int, int] = {}

    def lazy(self, index):
        def first_run(w):
            built = self.block(index)
            self.table[index] = built
            return built(w)
        return first_run

    def block(self, index):
        instructions = self.program.instructions
        first = build(instructions[index], self.program, index)
        if not plain(instructions[index]):
            if getattr(first, "span_end", None):  # a region it runs itself (gpr_idx): its hits spread too
                self.spans[index] = first.span_end
            return first
        members, end = [first], index + 1
        while end < len(instructions) and plain(instructions[end]):
            try:
                member = build(instructions[end], self.program, end)
            except NotEmulated:  # raised when a wave gets there, by its own entry
                break
            if not instructions[end].mnemonic.startswith(("s_nop", "s_waitcnt")):  # counted, not run
                members.append(member)
            end += 1
        if end == index + 1:
            return first
        self.spans[index] = end
        members, extra = tuple(members), end - index - 1

        def run(w):
            for member in members:
                member(w)
            w.skipped += extra
            return end
        return run

    def spread_hits(self, hits: list[int]) -> None:
        """A block's entries are hits of each of its instructions (blocks may nest: entries
        are taken before any is spread)."""
        entries = list(hits)
        for start, end in self.spans.items():
            for k in range(start + 1, end):
                hits[k] += entries[start]
