"""The checkers on the C fast path: a bad access stops C before anything changes and the numpy
executor raises the fault in its own words, so both paths fail alike (out of bounds, LDS race)."""
import re

import numpy as np
import pytest

from harness.emulator.code_object import load_code_object
from harness.emulator.errors import EmulationFault
from harness.emulator.launch import run_kernel

from .kernels import assemble, memory_of, pack_args

POINTER = """
  s_load_dwordx2 s[2:3], s[0:1], 0x0
  s_waitcnt lgkmcnt(0)
  v_lshlrev_b32_e32 v1, 2, v0
"""
PAST_END = POINTER + """
  global_load_dword v2, v1, s[2:3] offset:64
  s_waitcnt vmcnt(0)
  global_store_dword v1, v2, s[2:3]
  s_endpgm
"""
SAME_WORD = """
  v_mov_b32_e32 v1, 0
  ds_write_b32 v1, v0
  s_waitcnt lgkmcnt(0)
  s_endpgm
"""


def fault_of(monkeypatch, native: str, body: str, block, lds: int = 0) -> str:
    monkeypatch.setenv("HARNESS_EMULATOR_NATIVE", native)
    code = load_code_object(assemble(body, lds=lds))
    data = np.zeros(64, np.float32)
    with pytest.raises(EmulationFault) as caught:
        run_kernel(code, "k", (1, 1, 1), block, pack_args(data), memory=memory_of(data))
    return re.sub(r"0x[0-9a-f]{9,}", "ADDRESS", str(caught.value))  # each run's own array


@pytest.mark.parametrize("body, block, lds, words", [
    (PAST_END, (64, 1, 1), 0, "out of bounds"),
    (SAME_WORD, (128, 1, 1), 256, "lds race")])
def test_faults_read_the_same_on_both_paths(monkeypatch, body, block, lds, words):
    fast = fault_of(monkeypatch, "1", body, block, lds)
    reference = fault_of(monkeypatch, "0", body, block, lds)
    assert words in fast
    assert fast == reference


def test_a_launch_says_which_engine_ran(monkeypatch):
    body = POINTER + "  global_store_dword v1, v1, s[2:3]\n  s_endpgm\n"
    data = np.zeros(64, np.uint32)
    engines = []
    for native in ("1", "0"):
        monkeypatch.setenv("HARNESS_EMULATOR_NATIVE", native)
        code = load_code_object(assemble(body))
        counts = run_kernel(code, "k", (1, 1, 1), (64, 1, 1), pack_args(data), memory=memory_of(data))
        engines.append(counts.engine)
        assert data.tolist() == [4 * lane for lane in range(64)]
    assert engines[0].startswith("C fast path") and engines[1] == "numpy executors"
