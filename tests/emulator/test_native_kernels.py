"""Whole launches on both paths: a kernel with a loop, LDS, barriers, four waves per
workgroup and three workgroups, each wave's turn cut short (a small quantum stops C inside
its chunks), against the numpy executors: outputs and counts bit for bit."""
import numpy as np
import pytest

from harness.emulator.code_object import load_code_object
from harness.emulator.launch import run_kernel

from .kernels import compile_hip, memory_of, pack_args
from .native_bench import skip_without_clang

ROUNDS = """
KERNEL void rounds(float *out, const float *in, int n) {
  SHARED float tile[256];
  int t = tid();
  float acc = 0.0f;
  for (int r = 0; r < n; r++) {
    tile[t] = in[bid() * 256 + t] * (float)(r + 1);
    sync();
    acc = acc * 0.5f + tile[(t + 37 * r) & 255];
    sync();
  }
  if (t & 1) acc = -acc;
  out[bid() * 256 + t] = acc;
}
"""


def launch(code, native: bool, quantum: int):
    values = np.random.default_rng(3).standard_normal(3 * 256).astype(np.float32)
    out = np.zeros(3 * 256, np.float32)
    counts = run_kernel(code, "rounds", (3, 1, 1), (256, 1, 1), pack_args(out, values, 6),
                        memory=memory_of(out, values), quantum=quantum, native=native)
    return out, counts


@pytest.mark.parametrize("quantum", [4000, 3, 17])
def test_a_looping_barriered_kernel_matches_the_numpy_executors(quantum):
    skip_without_clang()
    code = load_code_object(compile_hip(ROUNDS))
    expected, reference = launch(code, False, quantum)
    found, fast = launch(code, True, quantum)
    assert fast.engine.startswith("C fast path") and not reference.engine.startswith("C")
    assert found.view(np.uint32).tolist() == expected.view(np.uint32).tolist()
    assert (fast.instructions, fast.by_mnemonic, fast.bytes) == \
        (reference.instructions, reference.by_mnemonic, reference.bytes)
    assert expected.any()
