"""The checkers fail the run by name: an LDS race, an access past a tensor, a hang, an instruction
we lack; a kernel waiting on another workgroup's flag finishes."""
import numpy as np
import pytest
import torch

from harness.emulator.code_object import load_code_object
from harness.emulator.errors import EmulationFault, NotEmulated
from harness.emulator.launch import run_kernel

from .kernels import assemble, compile_hip, memory_of, pack_args

SHIFT = """
KERNEL void shift(const float* x, float* out) {
  SHARED float tile[128];
  tile[tid()] = x[tid()];
  BARRIER
  out[tid()] = tile[(tid() + 64) % 128];
}"""
WAIT_FOR_FLAG = """
KERNEL void ticket(volatile int* flag, float* out) {
  if (bid() == 0) {
    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == 0) __builtin_amdgcn_s_sleep(1);
    if (tid() == 0) out[0] = 2.0f;
  } else if (tid() == 0) {
    out[1] = WRITER;
    __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
  }
}"""


def run_shift(barrier: str):
    code = load_code_object(compile_hip(SHIFT.replace("BARRIER", barrier)))
    x, out = torch.randn(128), torch.zeros(128)
    run_kernel(code, "shift", (1, 1, 1), (128, 1, 1), pack_args(x, out), memory=memory_of(x, out))
    return x, out


def test_two_waves_sharing_lds_with_a_barrier_pass():
    x, out = run_shift("sync();")
    assert torch.equal(out, torch.roll(x, -64))


def test_a_missing_barrier_is_an_lds_race_named_with_the_instruction():
    with pytest.raises(EmulationFault) as caught:
        run_shift("")
    fault = caught.value
    assert fault.kind == "lds race" and fault.kernel == "shift"
    # wave 0 reads wave 1's half before wave 1 writes it: a write-after-read race
    assert fault.mnemonic.startswith("ds_") and "since the last s_barrier" in fault.message
    assert fault.offset.startswith("0x")


def test_a_workgroup_waiting_on_another_workgroups_flag_finishes(monkeypatch):
    # workgroup 0 runs first and spins until workgroup 1, let in beside it, writes the flag
    from harness.emulator import launch
    monkeypatch.setattr(launch, "WORKGROUP_SLICE", 2000)
    code = load_code_object(compile_hip(WAIT_FOR_FLAG.replace("WRITER", "1.0f")))
    flag, out = torch.zeros(1, dtype=torch.int32), torch.zeros(2)
    run_kernel(code, "ticket", (2, 1, 1), (64, 1, 1), pack_args(flag, out), memory=memory_of(flag, out))
    assert out.tolist() == [2.0, 1.0]


def test_a_spin_on_a_flag_nobody_writes_is_a_hang(monkeypatch):
    from harness.emulator import launch
    monkeypatch.setattr(launch, "HANG_LIMIT", 20_000)
    monkeypatch.setattr(launch, "WORKGROUP_SLICE", 2000)
    source = WAIT_FOR_FLAG.replace("__atomic_store_n(flag, 1, __ATOMIC_RELEASE);", "")
    code = load_code_object(compile_hip(source.replace("WRITER", "1.0f")))
    flag, out = torch.zeros(1, dtype=torch.int32), torch.zeros(2)
    with pytest.raises(EmulationFault) as caught:
        run_kernel(code, "ticket", (2, 1, 1), (64, 1, 1), pack_args(flag, out), memory=memory_of(flag, out))
    assert caught.value.kind == "hang" and caught.value.kernel == "ticket"


def test_an_instruction_we_lack_stops_the_run_when_reached_with_its_name():
    body = """
  s_cmp_eq_u32 s0, 0x7fffffff
  s_cbranch_scc1 .Lskip
  s_endpgm
.Lskip:
  v_cvt_off_f32_i4 v1, v2
  s_endpgm
"""
    code = load_code_object(assemble(body))
    out = np.zeros(4, np.float32)
    run_kernel(code, "k", (1, 1, 1), (64, 1, 1), pack_args(out), memory=memory_of(out))  # not reached
    code = load_code_object(assemble(body.replace("s_cbranch_scc1", "s_branch")))
    with pytest.raises(NotEmulated) as caught:
        run_kernel(code, "k", (1, 1, 1), (64, 1, 1), pack_args(out), memory=memory_of(out))
    assert str(caught.value) == "not emulated: v_cvt_off_f32_i4_e32 in k"
    assert caught.value.mnemonic == "v_cvt_off_f32_i4_e32"
