"""Program control: SOPP branches, s_waitcnt (a no-op: memory is done when an instruction ends),
s_barrier, s_endpgm, s_sleep, and the PC moves s_getpc/s_setpc/s_swappc."""
from .errors import EmulationFault, NotEmulated
from .operands import parse, scalar_reader, scalar_writer

BARRIER, END, YIELD = -1, -2, -3
NO_OPS = {"waitcnt", "nop", "setprio", "waitcnt_vscnt", "waitcnt_vmcnt", "waitcnt_lgkmcnt",
          "waitcnt_expcnt", "dcache_inv", "dcache_wb", "icache_inv", "dcache_inv_vol",
          "dcache_wb_vol", "buffer_wbinvl1", "buffer_wbinvl1_vol", "setkill", "sethalt",
          "ttracedata", "set_gpr_idx_off", "wait_idle"}
CONDITIONS = {
    "scc0": lambda w: w.scc == 0, "scc1": lambda w: w.scc == 1,
    "vccz": lambda w: w.s[106] == 0 and w.s[107] == 0,
    "vccnz": lambda w: w.s[106] != 0 or w.s[107] != 0,
    "execz": lambda w: w.s[126] == 0 and w.s[127] == 0,
    "execnz": lambda w: w.s[126] != 0 or w.s[127] != 0,
}


PC_MOVES = {"getreg_b32", "setreg_b32", "setreg_imm32_b32", "getpc_b64", "setpc_b64",
            "swappc_b64", "call_b64"}
ENDS = {"endpgm", "endpgm_saved", "endpgm_ordered_ps_done"}
CONTROL = {"branch", "barrier", "sleep", "trap"} | ENDS | PC_MOVES


def knows(name: str) -> bool:
    """The program-control opcodes built here (the name after 's_')."""
    return (name in NO_OPS or name in CONTROL or name.startswith("waitcnt")
            or name.startswith("cbranch_") and name[len("cbranch_"):] in CONDITIONS)


def simm16(ins) -> int:
    """The signed 16-bit immediate from the encoding (objdump prints it unsigned)."""
    value = ins.words[0] & 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def target_index(program, ins) -> int:
    address = ins.pc + 4 + 4 * simm16(ins)
    if address not in program.index_of:
        raise NotEmulated(ins.mnemonic, detail=f"branch into no instruction at 0x{address:x}")
    return program.index_of[address]


def build(ins, name, program, index):
    if name in NO_OPS or name.startswith("waitcnt"):
        return lambda w: None
    if name == "branch":
        target = target_index(program, ins)
        return lambda w: target
    if name.startswith("cbranch_"):
        condition = CONDITIONS.get(name[len("cbranch_"):])
        if condition is None:
            raise NotEmulated(ins.mnemonic)
        target = target_index(program, ins)
        return lambda w: target if condition(w) else None
    if name == "barrier":
        return lambda w: BARRIER
    if name in ENDS:
        return lambda w: END
    if name == "sleep":
        return lambda w: YIELD
    if name == "trap":
        def trap(w):
            code = ins.operands[0] if ins.operands else ""
            raise EmulationFault("trap", f"s_trap {code} (a device-side assert or abort)")
        return trap
    return pc_moves(ins, name, program, index)


def pc_moves(ins, name, program, index):
    if name == "getreg_b32":
        write = scalar_writer(parse(ins.operands[0]))
        return lambda w: write(w, 0)
    if name in ("setreg_b32", "setreg_imm32_b32"):
        return lambda w: None
    ops = [parse(text) for text in ins.operands]
    following = ins.pc + ins.size
    base = program.load_base
    if name == "getpc_b64":
        write = scalar_writer(ops[0], 64)
        return lambda w: write(w, base + following)
    if name in ("setpc_b64", "swappc_b64"):
        read = scalar_reader(ops[-1], 64)
        write = scalar_writer(ops[0], 64) if name == "swappc_b64" else None

        def jump(w):
            address = read(w) - base
            if write is not None:
                write(w, base + following)
            if address not in program.index_of:
                raise EmulationFault("bad jump", f"s_{name} to 0x{address:x}, no instruction there")
            return program.index_of[address]
        return jump
    if name == "call_b64":
        write = scalar_writer(ops[0], 64)
        address = ins.pc + 4 + 4 * simm16(ins)
        target = program.index_of[address]

        def call(w):
            write(w, base + following)
            return target
        return call
    raise NotEmulated(ins.mnemonic)
