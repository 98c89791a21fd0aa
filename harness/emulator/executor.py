"""One cached executor per instruction: chosen by family from the mnemonic, built on first reach
(so an instruction we lack stops the run only when a wave gets there)."""
from . import buffer, ds, gpr_idx, salu, smem, sopp, valu, valu_forms, valu_packed, vcmp, vmem
from .errors import NotEmulated
from .valu_ops import OPS

SMEM_PREFIXES = ("load_dword", "buffer_load_dword", "memtime", "memrealtime")
MATRIX_PREFIXES = ("mfma_", "smfmac_", "accvgpr_", "permlane", "cvt_scalef32")


def scalar_known(name: str) -> bool:
    return (name in salu.SOP2 or name in salu.SOP1 or name.endswith("_saveexec_b64")
            or name.startswith(("cmp_", "bitcmp", "cmpk_"))
            or name in ("movk_i32", "cmovk_i32", "addk_i32", "mulk_i32"))


def matrix_builder(ins, name):
    from . import matrix
    return matrix.build(ins, name)


def build(ins, program, index):
    """The executor fn(wave) -> None (next), an instruction index, or a sopp code (< 0)."""
    mnemonic = ins.mnemonic
    if mnemonic.startswith("s_"):
        name = mnemonic[2:]
        if name.startswith(SMEM_PREFIXES):
            return smem.build(ins, name)
        if name == "set_gpr_idx_on":
            return gpr_idx.build(ins, program, index)
        if scalar_known(name):
            return salu.build(ins, name)
        return sopp.build(ins, name, program, index)
    if mnemonic.startswith("v_"):
        name = valu.base_name(mnemonic)
        if name.startswith(("cmp_", "cmpx_")):
            return vcmp.build(ins, name)
        if name in valu_forms.FORMS:
            return valu_forms.FORMS[name](ins)
        if name.startswith(MATRIX_PREFIXES):
            return matrix_builder(ins, name)
        if valu_packed.knows(name):
            return valu_packed.build(ins, name)
        if name in OPS:
            return valu.build(ins, name)
        raise NotEmulated(mnemonic)
    family, _, name = mnemonic.partition("_")
    if family == "ds":
        if name.startswith("read_b64_tr"):
            return matrix_builder(ins, name)
        return ds.build(ins, name)
    if family in ("global", "flat"):
        return vmem.build(ins, name, family)
    if family == "buffer":
        return buffer.build(ins, name)
    raise NotEmulated(mnemonic)


def plain(ins) -> bool:
    """An ALU instruction or a no-op: it never jumps, never faults at run time, touches no memory."""
    mnemonic = ins.mnemonic
    if mnemonic == "s_nop" or mnemonic.startswith("s_waitcnt"):
        return True
    if mnemonic.startswith("v_"):
        return not mnemonic[2:].startswith(MATRIX_PREFIXES + ("cmpx_",))
    name = mnemonic[2:]
    return mnemonic.startswith("s_") and scalar_known(name) and not name.startswith(SMEM_PREFIXES)


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
