"""The table tests' bench: a family's instructions assembled into one kernel (one llvm-mc and one
llvm-objdump per session), each decoded instruction's executor built by the real dispatch and run
on a bare wave whose registers the test sets (no launch, no memory)."""
import functools

from harness.emulator import executor
from harness.emulator.code_object import load_code_object
from harness.emulator.wave import Wave

from .kernels import assemble

ALL_LANES = (1 << 64) - 1


@functools.lru_cache(maxsize=None)
def decoded(lines: tuple[str, ...]):
    """The decoded program of `lines` then s_endpgm, one instruction per line."""
    body = "".join(f"  {line}\n" for line in lines) + "  s_endpgm\n"
    program = load_code_object(assemble(body, vgprs=128)).program
    assert len(program.instructions) == len(lines) + 1, "a line assembled to more than one instruction"
    return program


def executor_of(lines: tuple[str, ...], line: str):
    """The executor of one line, built as a kernel's would be (executor.build)."""
    program = decoded(lines)
    at = lines.index(line)
    return executor.build(program.instructions[at], program, at)


def bare_wave(sgprs=None) -> Wave:
    wave = Wave(None, 0, 0)
    if sgprs is not None:
        wave.s = list(sgprs)
    wave.exec_bits = ALL_LANES
    return wave
