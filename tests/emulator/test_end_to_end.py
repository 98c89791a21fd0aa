"""Small HIP kernels compiled by clang-22 for gfx950 and run on the emulator, checked against torch."""
import pytest
import torch

from harness.emulator.code_object import load_code_object
from harness.emulator.counts import LABEL
from harness.emulator.launch import run_kernel

from .kernels import compile_hip, memory_of, pack_args

VECTOR_ADD = """
KERNEL void vadd(const float* a, const float* b, float* c, int n) {
  int i = bid() * 256 + tid();
  if (i < n) c[i] = a[i] * 2.0f + b[i];
}"""
REDUCTION = """
KERNEL void row_sum(const float* x, float* out, int n) {
  SHARED float part[256];
  const float* row = x + (long)bid() * n;
  float acc = 0.0f;
  for (int i = tid(); i < n; i += 256) acc += row[i];
  part[tid()] = acc;
  sync();
  for (int step = 128; step > 0; step >>= 1) {
    if (tid() < step) part[tid()] += part[tid() + step];
    sync();
  }
  if (tid() == 0) out[bid()] = part[0];
}"""
GEMM = """
#define T 16
KERNEL void gemm(const float* a, const float* b, float* c, int m, int n, int k) {
  SHARED float ta[T][T + 1];
  SHARED float tb[T][T + 1];
  int row = bid_y() * T + tid_y(), col = bid() * T + tid();
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += T) {
    ta[tid_y()][tid()] = (row < m && k0 + tid() < k) ? a[row * k + k0 + tid()] : 0.0f;
    tb[tid_y()][tid()] = (col < n && k0 + tid_y() < k) ? b[(k0 + tid_y()) * n + col] : 0.0f;
    sync();
    for (int j = 0; j < T; ++j) acc += ta[tid_y()][j] * tb[j][tid()];
    sync();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}"""


def test_vector_add_matches_torch():
    code = load_code_object(compile_hip(VECTOR_ADD))
    n = 1000
    a, b = torch.rand(n), torch.rand(n)
    c = torch.zeros(n)
    counts = run_kernel(code, "vadd", (4, 1, 1), (256, 1, 1), pack_args(a, b, c, n),
                        memory=memory_of(a, b, c))
    assert torch.equal(c, torch.addcmul(b, a, torch.tensor(2.0)))
    assert counts.workgroups == 4 and counts.waves_per_workgroup == 4
    assert counts.by_class["global_store"] == 16 and counts.bytes["global_store"] == 4 * n
    assert counts.label == LABEL and counts.rate > 0


def test_reduction_with_lds_and_barriers_matches_torch():
    code = load_code_object(compile_hip(REDUCTION))
    rows, n = 3, 1000
    x = torch.randn(rows, n)
    out = torch.zeros(rows)
    run_kernel(code, "row_sum", (rows, 1, 1), (256, 1, 1), pack_args(x, out, n), memory=memory_of(x, out))
    torch.testing.assert_close(out, x.sum(dim=1), rtol=1e-5, atol=1e-4)


def test_tiled_gemm_without_mfma_matches_torch():
    code = load_code_object(compile_hip(GEMM))
    m, n, k = 20, 33, 40
    a, b = torch.randn(m, k), torch.randn(k, n)
    c = torch.zeros(m, n)
    counts = run_kernel(code, "gemm", ((n + 15) // 16, (m + 15) // 16, 1), (16, 16, 1),
                        pack_args(a, b, c, m, n, k), memory=memory_of(a, b, c))
    torch.testing.assert_close(c, a @ b, rtol=1e-5, atol=1e-4)
    assert counts.by_class["LDS"] > 0 and "MFMA" not in counts.by_class


def test_a_read_one_past_the_end_is_named():
    from harness.emulator.errors import EmulationFault
    code = load_code_object(compile_hip(VECTOR_ADD))
    n = 1000
    a, b, c = torch.rand(n), torch.rand(n), torch.zeros(n)
    with pytest.raises(EmulationFault) as caught:
        run_kernel(code, "vadd", (4, 1, 1), (256, 1, 1), pack_args(a, b, c, n + 1),
                   memory=memory_of(a, b, c))
    fault = caught.value
    assert fault.kind == "out of bounds" and fault.kernel == "vadd"
    assert fault.mnemonic.startswith("global_load") and fault.offset.startswith("0x")
    assert "0 bytes past the end of arg" in fault.message


TABLE = """
__attribute__((constant)) float kTable[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
__attribute__((device)) int calls;
KERNEL void decode(const unsigned char* codes, float* out, int n) {
  int i = bid() * 64 + tid();
  if (i < n) out[i] = kTable[codes[i] & 15];
  if (i == 0) atomicAdd(&calls, 1);
}
KERNEL void read_calls(int* out) { out[0] = calls; }"""


def test_constant_tables_and_device_globals_live_in_the_code_object():
    code = load_code_object(compile_hip(TABLE.replace("atomicAdd(&calls, 1)",
                                                      "__atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED)")))
    n = 100
    codes = torch.randint(0, 16, (n,), dtype=torch.uint8)
    out, seen = torch.zeros(n), torch.zeros(1, dtype=torch.int32)
    table = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])
    for _ in range(2):
        run_kernel(code, "decode", (2, 1, 1), (64, 1, 1), pack_args(codes, out, n), memory=memory_of(codes, out))
    run_kernel(code, "read_calls", (1, 1, 1), (64, 1, 1), pack_args(seen), memory=memory_of(seen))
    assert torch.equal(out, table[codes.long()]) and seen.item() == 2
