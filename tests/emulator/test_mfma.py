"""MFMA on the emulator: clang-22-compiled kernels using __builtin_amdgcn_mfma_* against torch, and
the K order of the f8f6f4 shapes told apart by per-32-value e8m0 scales (fp8: two 16-value halves
64 apart, as Triton's AMD backend lays them out; tests/emulator/test_triton.py has its witness)."""
import numpy as np
import pytest
import torch

from harness.emulator import matrix
from harness.emulator.code_object import load_code_object
from harness.emulator.launch import run_kernel

from .kernels import compile_hip, memory_of, pack_args

TYPES = """
typedef __bf16 bf16x8 __attribute__((ext_vector_type(8)));
typedef float f32x4 __attribute__((ext_vector_type(4)));
typedef float f32x16 __attribute__((ext_vector_type(16)));
typedef int i32x8 __attribute__((ext_vector_type(8)));
"""
BF16 = TYPES + """
KERNEL void mm(const __bf16* a, const __bf16* b, float* d) {
  int l = tid();
  bf16x8 x, y;
  for (int e = 0; e < 8; ++e) {
    x[e] = a[(l % 16) * 32 + (l / 16) * 8 + e];
    y[e] = b[((l / 16) * 8 + e) * 16 + l % 16];
  }
  f32x4 c = {0, 0, 0, 0};
  c = __builtin_amdgcn_mfma_f32_16x16x32_bf16(x, y, c, 0, 0, 0);
  for (int r = 0; r < 4; ++r) d[(4 * (l / 16) + r) * 16 + l % 16] = c[r];
}"""
FP8_32 = TYPES + """
KERNEL void mm(const unsigned char* a, const unsigned char* bt, float* d) {
  int l = tid();
  long x = *(const long*)(a + (l % 32) * 16 + (l / 32) * 8);
  long y = *(const long*)(bt + (l % 32) * 16 + (l / 32) * 8);
  f32x16 c = {};
  c = __builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8(x, y, c, 0, 0, 0);
  for (int r = 0; r < 16; ++r) d[(8 * (r / 4) + 4 * (l / 32) + r % 4) * 32 + l % 32] = c[r];
}"""
SCALED = TYPES + """
KERNEL void mm(const unsigned char* a, const unsigned char* bt, const unsigned char* sa,
               const unsigned char* sb, float* d) {
  int l = tid();
  i32x8 x, y;
  // fp8: K 16g..16g+15 in x[0..3], K 64+16g.. in x[4..7] (g = l / 16)
  const int* pa = (const int*)(a + (l % 16) * 128 + (l / 16) * 16);
  const int* pb = (const int*)(bt + (l % 16) * 128 + (l / 16) * 16);
  for (int e = 0; e < 4; ++e) { x[e] = pa[e]; y[e] = pb[e]; x[e + 4] = pa[e + 16]; y[e + 4] = pb[e + 16]; }
  f32x4 c = {0, 0, 0, 0};
  c = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(x, y, c, 0, 0, 0, sa[(l % 16) * 4 + l / 16],
                                                       0, sb[(l % 16) * 4 + l / 16]);
  for (int r = 0; r < 4; ++r) d[(4 * (l / 16) + r) * 16 + l % 16] = c[r];
}"""


def launch(source, *arrays):
    code = load_code_object(compile_hip(source))
    counts = run_kernel(code, "mm", (1, 1, 1), (64, 1, 1), pack_args(*arrays), memory=memory_of(*arrays))
    return counts


def test_bf16_16x16x32_matches_torch():
    a = torch.randn(16, 32).to(torch.bfloat16)
    b = torch.randn(32, 16).to(torch.bfloat16)
    d = torch.zeros(16, 16)
    counts = launch(BF16, a, b, d)
    torch.testing.assert_close(d, a.float() @ b.float(), rtol=1e-5, atol=1e-5)
    assert counts.mfma_by_name == {"v_mfma_f32_16x16x32_bf16": 1}


def test_fp8_32x32x16_matches_torch():
    a = torch.randn(32, 16).to(torch.float8_e4m3fn)
    bt = torch.randn(32, 16).to(torch.float8_e4m3fn)
    d = torch.zeros(32, 32)
    launch(FP8_32, a.view(torch.uint8), bt.view(torch.uint8), d)
    torch.testing.assert_close(d, a.float() @ bt.float().T, rtol=1e-5, atol=1e-5)


def scaled_case():
    generator = torch.Generator().manual_seed(3)
    a = torch.randn(16, 128, generator=generator).to(torch.float8_e4m3fn)
    bt = torch.randn(16, 128, generator=generator).to(torch.float8_e4m3fn)
    # one e8m0 scale per row and 32 consecutive K values, far apart so a wrong K order shows
    sa = torch.randint(118, 136, (16, 4), generator=generator, dtype=torch.uint8)
    sb = torch.randint(118, 136, (16, 4), generator=generator, dtype=torch.uint8)
    d = torch.zeros(16, 16)
    launch(SCALED, a.view(torch.uint8), bt.view(torch.uint8), sa, sb, d)
    scale = lambda s: torch.pow(2.0, s.double() - 127).repeat_interleave(32, dim=1)
    expected = (a.double() * scale(sa)) @ (bt.double() * scale(sb)).T
    return d, expected.float()


def test_scaled_16x16x128_f8f6f4_with_32_value_scale_blocks_matches_torch():
    d, expected = scaled_case()
    torch.testing.assert_close(d, expected, rtol=1e-5, atol=1e-3)


def test_a_planted_wrong_k_order_for_a_fails_the_scaled_test(monkeypatch):
    """A's fp8 K order as 32 contiguous values per lane group (B kept): the result moves."""
    right = matrix.k_order

    def swapped(m, k, operand, kind=""):
        if operand != "A" or (m, k) != (16, 128):
            return right(m, k, operand, kind)
        return (np.arange(64) // 16)[:, None] * 32 + np.arange(32)
    monkeypatch.setattr(matrix, "k_order", swapped)
    d, expected = scaled_case()
    assert not torch.allclose(d, expected, rtol=1e-2, atol=1.0)


F64 = TYPES + """
typedef double f64x4 __attribute__((ext_vector_type(4)));
KERNEL void mm(const double* a, const double* b, double* d) {
  int l = tid();
  f64x4 c = {0, 0, 0, 0};
  c = __builtin_amdgcn_mfma_f64_16x16x4f64(a[l], b[l], c, 0, 0, 0);
  for (int r = 0; r < 4; ++r) d[r * 64 + l] = c[r];
}"""


def test_an_mfma_the_emulator_lacks_is_not_emulated_with_its_mnemonic():
    from harness.emulator.errors import NotEmulated
    a, b = torch.randn(64, dtype=torch.float64), torch.randn(64, dtype=torch.float64)
    d = torch.zeros(256, dtype=torch.float64)
    with pytest.raises(NotEmulated) as caught:
        launch(F64, a, b, d)
    assert str(caught.value).startswith("not emulated: v_mfma_f64_16x16x4") and str(caught.value).endswith(" in mm")


def test_fp6_operands_of_the_f8f6f4_mfma_are_not_emulated():
    """No Triton dot witnesses their K order, so cbsz:2 (fp6) is refused by name rather than guessed."""
    from harness.emulator.errors import NotEmulated
    from .snippets import snippet
    with pytest.raises(NotEmulated) as caught:
        snippet("  v_mfma_f32_16x16x128_f8f6f4 v[20:23], v[24:29], v[32:37], 0 cbsz:2 blgp:2", [np.zeros(64)])
    assert "v_mfma_f32_16x16x128_f8f6f4 with fp6 operands (K order not settled)" in str(caught.value)
