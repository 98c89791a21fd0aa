"""The C fast path translates only the launched kernel: the instructions its entry reaches
through fall-through and branches, not the code object's other kernels (aiter's modules hold
72 each: translating all of them took minutes on a first launch)."""
import numpy as np
import pytest

from harness.emulator.code_object import load_code_object
from harness.emulator.launch import run_kernel
from harness.emulator.native import program as native_program

from .kernels import compile_hip, memory_of, pack_args
from .native_bench import skip_without_clang

TWO_KERNELS = """
KERNEL void ones(float *out) { out[tid()] = 1.0f; }
KERNEL void sums(float *out, int n) {
  float s = 0.0f;
  for (int k = 0; k < n; k++) s += (float)(k * tid());
  if (tid() > 30) s = -s;
  out[tid()] = s;
}
"""


@pytest.fixture(scope="module")
def code():
    skip_without_clang()
    return load_code_object(compile_hip(TWO_KERNELS))


def span(code, name: str) -> range:
    """The indices of a kernel's own instructions (from its entry to the next kernel's)."""
    index_of = code.program.index_of
    starts = sorted(index_of[info.entry] for key, info in code.kernels.items()
                    if not key.endswith(".kd"))
    first = index_of[code.kernels[name].entry]
    later = [k for k in starts if k > first]
    return range(first, later[0] if later else len(code.program.instructions))


def test_only_the_launched_kernels_instructions_are_translated(code):
    sums = span(code, "sums")
    native = native_program.native_program(code, sums.start)
    translated = [k for k, done in enumerate(native.translated) if done]
    assert translated and all(k in sums for k in translated)
    ends = [k for k in sums if code.program.instructions[k].mnemonic == "s_endpgm"]
    # the loop's branch back and the code after it are reached: both ends of the kernel
    assert ends and all(native.translated[k] for k in ends)
    assert native_program.native_program(code, sums.start) is native  # kept per entry


def test_each_kernel_runs_on_its_own_translation(code):
    out = np.zeros(64, np.float32)
    memory = memory_of(out)
    counts = run_kernel(code, "ones", (1, 1, 1), (64, 1, 1), pack_args(out), memory=memory)
    assert counts.engine.startswith("C fast path") and (out == 1).all()
    counts = run_kernel(code, "sums", (1, 1, 1), (64, 1, 1), pack_args(out, 5), memory=memory)
    lanes = np.arange(64, dtype=np.float32)
    expected = (10 * lanes) * np.where(lanes > 30, -1, 1)
    assert counts.engine.startswith("C fast path") and (out == expected).all()
    kept = code.__dict__["_native"]
    assert len(kept) == 2 and all(p is not None for p in kept.values())
