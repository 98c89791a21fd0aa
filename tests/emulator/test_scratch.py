"""Scratch (each wave's private segment) on the gfx950 emulator: HIP kernels that keep a private
array, pass it to a call or spill, against numpy; scratch_* forms and their faults in assembly;
the swizzled layout against AMD's rule written out by hand."""
import numpy as np
import pytest

from harness.emulator.code_object import load_code_object
from harness.emulator.errors import EmulationFault, NotEmulated
from harness.emulator.launch import run_kernel
from harness.emulator.scratch import Scratch

from .kernels import assemble, compile_hip, memory_of, pack_args

TABLE = """
KERNEL void table(const int* idx, const float* x, float* out, int steps) {
  int i = bid() * 128 + tid();
  float t[100];  // indexed by a loaded value: the compiler must keep it in scratch
  for (int k = 0; k < 100; ++k) t[k] = x[i] * k;
  float acc = 0.0f;
  for (int k = 0; k < steps; ++k) acc += t[(idx[i] + k) % 100];
  out[i] = acc;
}"""
CALLED = """
__attribute__((device, noinline)) float pair(float* t, int j) { return t[j] + t[j ^ 1]; }
KERNEL void called(const int* idx, const float* x, float* out) {
  int i = bid() * 64 + tid();
  float t[16];  // passed to a call: reached by flat_* in the private aperture
  for (int k = 0; k < 16; ++k) t[k] = x[i] * k;
  out[i] = pair(t, idx[i] & 15);
}"""
SPILL = """
KERNEL __attribute__((amdgpu_num_vgpr(12))) void spill(const unsigned* x, unsigned* out, int n) {
  int i = bid() * 64 + tid();
  unsigned v[24];  // more live values than 12 VGPRs: the compiler spills to scratch
  for (int k = 0; k < 24; ++k) v[k] = x[i * 24 + k];
  unsigned acc = 1;
  for (int r = 0; r < n; ++r)
    for (int k = 0; k < 24; ++k) { acc = acc * v[k] + v[(k + 7) % 24]; v[k] ^= acc >> 3; }
  out[i] = acc;
}"""


def test_private_array_indexed_at_run_time_matches_numpy():
    code = load_code_object(compile_hip(TABLE))
    info = code.kernels["table"]
    assert info.private_segment_size >= 400 and info.enable_private_segment
    rng = np.random.default_rng(7)
    n, steps = 256, 9
    idx = rng.integers(0, 1000, n).astype(np.int32)
    x = rng.random(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    counts = run_kernel(code, "table", (2, 1, 1), (128, 1, 1), pack_args(idx, x, out, steps),
                        memory=memory_of(idx, x, out))
    expected = np.zeros(n, np.float32)
    for k in range(steps):
        expected += x * ((idx + k) % 100).astype(np.float32)
    np.testing.assert_array_equal(out, expected)
    assert counts.by_class["scratch_load"] == 4 * steps  # 4 waves, one load per step
    assert counts.by_class["scratch_store"] > 0


def test_private_array_passed_to_a_call_goes_through_the_private_aperture():
    code = load_code_object(compile_hip(CALLED))
    rng = np.random.default_rng(8)
    idx = rng.integers(0, 1000, 128).astype(np.int32)
    x = rng.random(128).astype(np.float32)
    out = np.zeros(128, np.float32)
    run_kernel(code, "called", (2, 1, 1), (64, 1, 1), pack_args(idx, x, out),
               memory=memory_of(idx, x, out))
    j = idx & 15
    np.testing.assert_array_equal(out, x * j.astype(np.float32) + x * (j ^ 1).astype(np.float32))


def test_register_spills_round_trip():
    code = load_code_object(compile_hip(SPILL))
    assert code.kernels["spill"].metadata[".vgpr_spill_count"] > 0
    rng = np.random.default_rng(9)
    x = rng.integers(0, 2**32, (128, 24), dtype=np.uint64).astype(np.uint32)
    out = np.zeros(128, np.uint32)
    run_kernel(code, "spill", (2, 1, 1), (64, 1, 1), pack_args(x, out, 3), memory=memory_of(x, out))
    v, acc = x.astype(np.uint64), np.ones(128, np.uint64)
    for _ in range(3):
        for k in range(24):
            acc = (acc * v[:, k] + v[:, (k + 7) % 24]) & 0xFFFFFFFF
            v[:, k] ^= acc >> 3
    np.testing.assert_array_equal(out, acc.astype(np.uint32))


FORMS = """
  s_load_dwordx2 s[2:3], s[0:1], 0x0
  v_mov_b32 v9, 0x10203
  v_mul_u32_u24 v3, v0, v9
  v_add_u32 v3, 5, v3
  v_and_b32 v2, 7, v0
  v_lshlrev_b32 v2, 2, v2
  scratch_store_dword v2, v3, off offset:8
  scratch_store_dword off, v3, off offset:40
  s_barrier
  s_mov_b32 s4, 8
  s_mov_b32 s5, 40
  scratch_load_dword v4, v2, s4
  scratch_load_dword v5, off, s5
  scratch_load_ubyte v6, off, s5 offset:1
  v_add_u32 v8, 16, v2
  scratch_load_dword v7, v8, off offset:-8
  v_lshlrev_b32 v9, 4, v0
  s_waitcnt vmcnt(0) lgkmcnt(0)
  global_store_dwordx4 v9, v[4:7], s[2:3]
  s_endpgm
"""


def with_private_size(elf: bytes, lane_bytes: int):
    """The assembled kernel with a private segment (kernels.assemble's metadata says 0)."""
    code = load_code_object(elf)
    code.kernels["k"].private_segment_size = lane_bytes
    return code


def test_scratch_forms_round_trip_per_lane_and_per_wave():
    code = with_private_size(assemble(FORMS), 48)
    out = np.zeros((128, 4), np.uint32)
    run_kernel(code, "k", (1, 1, 1), (128, 1, 1), pack_args(out), memory=memory_of(out))
    lane = np.arange(128, dtype=np.uint32)
    value = lane * np.uint32(0x10203) + np.uint32(5)
    # lanes share private offsets (lane % 8, or none): one segment for all would mix them
    np.testing.assert_array_equal(out[:, 0], value)
    np.testing.assert_array_equal(out[:, 1], value)
    np.testing.assert_array_equal(out[:, 2], value >> 8 & 0xFF)
    np.testing.assert_array_equal(out[:, 3], value)


TO_LDS = """
  s_load_dwordx2 s[2:3], s[0:1], 0x0
  v_lshlrev_b32 v1, 2, v0
  v_xor_b32 v3, 0x5a5a, v0
  scratch_store_dword off, v3, off offset:12
  s_mov_b32 m0, 16
  scratch_load_lds_dword off, off offset:12
  s_waitcnt vmcnt(0)
  ds_read_b32 v4, v1 offset:28
  s_waitcnt lgkmcnt(0)
  global_store_dword v1, v4, s[2:3]
  s_endpgm
"""


def test_scratch_load_lds_lands_each_lane_at_m0_plus_offset_plus_lane_times_size():
    # the instruction offset moves the LDS target too, as vmem's global_load_lds reads the ISA
    code = with_private_size(assemble(TO_LDS, lds=512), 16)
    out = np.zeros(64, np.uint32)
    run_kernel(code, "k", (1, 1, 1), (64, 1, 1), pack_args(out), memory=memory_of(out))
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.uint32) ^ 0x5A5A)


OUT_OF_BOUNDS = """
  scratch_store_dword v0, v0, off
  s_endpgm
"""
BELOW_ZERO = """
  scratch_load_dword v1, off, off offset:-4
  s_endpgm
"""


@pytest.mark.parametrize("body, wanted", [
    (OUT_OF_BOUNDS, "private offset 125 of lane 61: past the 128 bytes per lane of scratch of wave 1"),
    (BELOW_ZERO, f"private offset {2**32 - 4} of lane 0: past the 128 bytes per lane of scratch of wave 0"),
])
def test_scratch_outside_the_lanes_bytes_faults(body, wanted):
    code = with_private_size(assemble(body), 128)
    with pytest.raises(EmulationFault) as fault:
        run_kernel(code, "k", (1, 1, 1), (128, 1, 1), pack_args(np.zeros(1)), memory=memory_of())
    assert fault.value.kind == "out of bounds" and wanted in fault.value.message
    assert fault.value.mnemonic.startswith("scratch_")


def test_layout_interleaves_dwords_over_the_64_lanes():
    scratch = Scratch(16, "scratch of wave 0")
    lanes = np.array([3, 10, 63])
    data = np.arange(3 * 8, dtype=np.uint8).reshape(3, 8) + 1
    scratch.write(lanes, np.array([0, 4, 8]), data)
    # AMD's swizzle by hand: private dword d of lane L is the 4 bytes at (d * 64 + L) * 4
    for row, (lane, first_dword) in enumerate([(3, 0), (10, 1), (63, 2)]):
        for half in range(2):
            at = ((first_dword + half) * 64 + lane) * 4
            assert scratch.bytes[at:at + 4].tolist() == data[row, 4 * half:4 * half + 4].tolist()
    assert np.count_nonzero(scratch.bytes) == data.size
    np.testing.assert_array_equal(scratch.read(lanes, np.array([0, 4, 8]), 8), data)


FLAT_ATOMIC = """
  s_mov_b64 s[4:5], src_private_base
  v_mov_b32 v2, 0
  v_mov_b32 v3, s5
  flat_atomic_add v[2:3], v0
  s_endpgm
"""


def test_flat_atomic_into_the_private_aperture_is_named_not_emulated():
    code = with_private_size(assemble(FLAT_ATOMIC), 16)
    with pytest.raises(NotEmulated, match="flat_atomic_add into the LDS or private aperture in k"):
        run_kernel(code, "k", (1, 1, 1), (64, 1, 1), pack_args(np.zeros(1)), memory=memory_of())


MIXED = """
  s_mov_b64 s[4:5], src_private_base
  v_mov_b32 v2, 0
  v_mov_b32 v3, s5
  v_mov_b32 v4, s0
  v_mov_b32 v5, s1
  v_cmp_gt_u32 vcc, 32, v0
  v_cndmask_b32 v3, v5, v3, vcc
  v_cndmask_b32 v2, v4, v2, vcc
  flat_load_dword v1, v[2:3]
  s_endpgm
"""


def test_flat_load_with_private_and_global_lanes_is_named_not_emulated():
    code = with_private_size(assemble(MIXED), 16)
    out = np.zeros(1, np.uint32)
    with pytest.raises(NotEmulated, match="flat load mixing apertures"):
        run_kernel(code, "k", (1, 1, 1), (64, 1, 1), pack_args(out), memory=memory_of(out))
