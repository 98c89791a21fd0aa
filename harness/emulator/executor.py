"""One cached executor per instruction: chosen by family from the mnemonic, built on first reach
(so an instruction we lack stops the run only when a wave gets there)."""
from . import buffer, ds, salu, smem, sopp, valu, valu_forms, valu_packed, vcmp, vmem
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


class Executors:
    """The executors of one program, built lazily and kept for every later launch."""

    def __init__(self, program):
        self.program = program
        self.table = [self.lazy(i) for i in range(len(program.instructions))]

    def lazy(self, index):
        def first_run(w):
            built = build(self.program.instructions[index], self.program, index)
            self.table[index] = built
            return built(w)
        return first_run
