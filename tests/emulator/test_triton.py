"""Triton kernels compiled for gfx950 by Triton's AMD backend and run on the emulator (launch_triton), against
torch and exact numpy products. Triton's codegen is tested on MI355X by its makers, so its dots coming out right
is the witness for the layouts the CDNA4 guide leaves to figures: ds_read_b64_tr_b8/_b16 and the fp8 K order of
the scaled MFMA."""
import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from harness.emulator import launch_hip, launch_triton, matrix

pytestmark = pytest.mark.xdist_group("triton_on_gfx950")


@pytest.fixture(autouse=True)
def emulated_triton():
    launch_triton.install()
    launch_hip.summary()
    yield
    launch_triton.uninstall()
    for kernel in (add, copy, dot, scaled_dot):
        kernel.device_caches.clear()  # each test compiles afresh: a planted executor never outlives its test


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = i < n
    tl.store(out + i, tl.load(x + i, mask=live) * 2 + tl.load(y + i, mask=live), mask=live)


@triton.jit
def copy(x, out, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + i, tl.load(x + i))  # no mask: the last program reads past a short x


@triton.jit
def dot(a_ptr, b_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])  # N contiguous: MFMA's B operand by transposed LDS reads
    tl.store(out_ptr + m[:, None] * N + n[None, :], tl.dot(a, b))


@triton.jit
def scaled_dot(a_ptr, a_scale, b_ptr, b_scale, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               A_FORMAT: tl.constexpr, B_FORMAT: tl.constexpr):
    m, n = tl.arange(0, M), tl.arange(0, N)
    KA: tl.constexpr = K // 2 if A_FORMAT == "e2m1" else K
    KB: tl.constexpr = K // 2 if B_FORMAT == "e2m1" else K
    a = tl.load(a_ptr + m[:, None] * KA + tl.arange(0, KA)[None, :])
    b = tl.load(b_ptr + n[:, None] * KB + tl.arange(0, KB)[None, :])
    blocks = tl.arange(0, K // 32)[None, :]
    sa = tl.load(a_scale + m[:, None] * (K // 32) + blocks)
    sb = tl.load(b_scale + n[:, None] * (K // 32) + blocks)
    c = tl.dot_scaled(a, sa, A_FORMAT, tl.trans(b), sb, B_FORMAT)
    tl.store(out_ptr + m[:, None] * N + n[None, :], c)


def test_a_launch_runs_the_gfx950_code_with_the_files_grid_and_is_counted():
    x, y, out = torch.randn(1000), torch.randn(1000), torch.zeros(1000)
    compiled = add[(triton.cdiv(1000, 256),)](x, y, out, 1000, BLOCK=256)
    assert torch.equal(out, 2 * x + y)
    assert compiled.metadata.target.arch == "gfx950"
    add[(1,)](x, y, out, 256, BLOCK=256)
    counts = launch_hip.summary()["add"]
    assert counts["launches"] == 2 and counts["counts"]["workgroups"] == 5
    assert counts["counts"]["waves_per_workgroup"] == 4  # 4 warps of 64 lanes, however many launches
    # 5 x 256 lanes issue fp32 buffer stores; the 24 masked ones fall outside the V#'s range and are dropped
    assert counts["counts"]["bytes.buffer_store"] == 5 * 1024


def test_a_read_past_a_tensor_fails_as_out_of_bounds():
    from harness.emulator.errors import EmulationFault
    with pytest.raises(EmulationFault) as caught:
        copy[(4,)](torch.randn(1000), torch.zeros(1024), BLOCK=256)
    assert "out of bounds" in str(caught.value) and "past the end of tensor argument 0" in str(caught.value)


def test_an_argument_the_bridge_cannot_pass_is_not_emulated_by_name():
    from harness.emulator.errors import NotEmulated
    with pytest.raises(NotEmulated) as caught:
        launch_triton.argument_bytes("tensordesc<fp16[16, 16]>", None, 8)
    assert str(caught.value).startswith("not emulated: a Triton argument of type tensordesc<fp16[16, 16]>")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn])
def test_dots_on_transposed_lds_reads_match_torch(dtype):
    a, b, out = torch.randn(32, 128).to(dtype), torch.randn(128, 64).to(dtype), torch.zeros(32, 64)
    compiled = dot[(1,)](a, b, out, 32, 64, 128, num_warps=4)
    assert "ds_read_b64_tr_b" in compiled.asm["amdgcn"]
    torch.testing.assert_close(out, a.float() @ b.float(), rtol=1e-5, atol=1e-4)


def test_a_planted_wrong_transpose_layout_fails_the_dot(monkeypatch):
    """The lanes of one 8x8 transpose taken as w % stride instead of w // per-lane: the dot moves."""
    def interleaved(element_bytes):
        per_lane = 8 // element_bytes
        stride = 16 // per_lane
        lane, element = np.arange(64)[:, None], np.arange(per_lane)[None, :]
        within = lane % 16
        return lane // 16 * 16 + element * stride + within % stride, np.broadcast_to(within // stride, (64, per_lane))
    monkeypatch.setattr(matrix, "transpose_source", interleaved)
    a, b, out = torch.randn(32, 128).to(torch.bfloat16), torch.randn(128, 64).to(torch.bfloat16), torch.zeros(32, 64)
    dot[(1,)](a, b, out, 32, 64, 128, num_warps=4)
    assert (out - a.float() @ b.float()).abs().max() > 1.0


E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])  # OCP MX fp4: 1 sign, 2 exponent (bias 1), 1 mantissa bit


def decoded(codes: torch.Tensor, fmt: str) -> np.ndarray:
    """Codes as float64, independently of the emulator: torch's float8 dtypes, fp4 by its OCP table
    (two codes a byte, the low nibble first)."""
    if fmt != "e2m1":
        dtype = torch.float8_e5m2 if fmt == "e5m2" else torch.float8_e4m3fn
        return codes.view(dtype).double().numpy()
    x = codes.numpy()
    nibbles = np.stack([x & 0xF, x >> 4], -1).reshape(x.shape[0], -1)
    return np.where(nibbles & 8, -1.0, 1.0) * E2M1[nibbles & 7]


def scaled_case(a_format, b_format, seed=0):
    """(out, exact) of a 32x32x128 scaled dot on random codes and e8m0 scales far apart."""
    rng = np.random.default_rng(seed)
    codes = lambda rows, fmt: torch.from_numpy(rng.integers(0, 256, (rows, 64 if fmt == "e2m1" else 128),
                                                             dtype=np.uint8))
    a, b = codes(32, a_format), codes(32, b_format)
    for x, fmt in ((a, a_format), (b, b_format)):
        if fmt == "e4m3":
            x[(x & 0x7F) == 0x7F] = 1  # no NaN codes
        if fmt == "e5m2":
            x[(x & 0x7C) == 0x7C] = 1  # no infinity or NaN codes
    sa, sb = (torch.from_numpy(rng.integers(118, 136, (32, 4), dtype=np.uint8)) for _ in range(2))
    out = torch.zeros(32, 32)
    scaled_dot[(1,)](a, sa, b, sb, out, 32, 32, 128, a_format, b_format, num_warps=4)

    def values(x, fmt, scale):
        return decoded(x, fmt) * np.repeat(2.0 ** (scale.numpy().astype(np.int64) - 127), 32, axis=1)
    return out.numpy(), values(a, a_format, sa) @ values(b, b_format, sb).T


@pytest.mark.parametrize("formats", [("e4m3", "e4m3"), ("e2m1", "e2m1"), ("e4m3", "e2m1"), ("e5m2", "e5m2"),
                                     ("e5m2", "e2m1")])
def test_scaled_dots_match_the_exact_products(formats):
    out, exact = scaled_case(*formats)
    assert np.abs(out - exact).max() <= 1e-6 * np.abs(exact).max()


def test_a_planted_contiguous_fp8_k_order_fails_the_scaled_dot(monkeypatch):
    """fp8 values of a lane as one 32-value run (the order fp4 takes): per-block scales land on the wrong K."""
    right = matrix.k_order
    monkeypatch.setattr(matrix, "k_order", lambda m, k, operand, kind="": right(m, k, operand, ""))
    out, exact = scaled_case("e4m3", "e4m3")
    assert np.abs(out - exact).max() > 0.01 * np.abs(exact).max()
