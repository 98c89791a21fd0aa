"""HIP without ROCm: the offload bundle, the kernarg layout, and a real load_inline build whose launch reaches a
run_kernel stand-in (this test's double, never the product's) with the right grid, block and argument bytes."""
import ctypes
import struct
from types import SimpleNamespace

import numpy as np
import pytest

from harness.emulator import launch_hip
from harness.emulator.hip_runtime import bundle, extension


def test_a_bundle_round_trips_and_names_a_missing_target():
    code = b"\x7fELF" + bytes(range(200))
    packed = bundle.pack({bundle.HOST: b"", bundle.GFX950: code})
    assert packed.startswith(bundle.MAGIC) and len(packed) % bundle.ALIGN == 0
    assert bundle.unpack(packed) == code
    held = ctypes.create_string_buffer(packed, len(packed))
    assert bundle.unpack_at(ctypes.addressof(held)) == code
    with pytest.raises(bundle.BundleError, match="no hipv4-amdgcn-amd-amdhsa--gfx942 entry"):
        bundle.unpack(packed, "hipv4-amdgcn-amd-amdhsa--gfx942")
    with pytest.raises(bundle.BundleError, match="magic"):
        bundle.unpack(b"\x7fELF" + bytes(100))


def test_kernarg_copies_explicit_arguments_and_fills_hidden_ones():
    pointer = ctypes.c_uint64(0x1234_5678_9ABC)
    scale = ctypes.c_float(2.5)
    count = ctypes.c_int32(-7)
    args = (ctypes.c_void_p * 3)(*(ctypes.addressof(v) for v in (pointer, scale, count)))
    info = SimpleNamespace(kernarg_size=80, args=[
        (0, 8, "global_buffer"), (8, 4, "by_value"), (12, 4, "by_value"),
        (16, 4, "hidden_block_count_x"), (20, 4, "hidden_block_count_y"), (24, 4, "hidden_block_count_z"),
        (28, 2, "hidden_group_size_x"), (30, 2, "hidden_group_size_y"), (32, 2, "hidden_group_size_z"),
        (34, 2, "hidden_remainder_x"), (56, 2, "hidden_grid_dims"), (60, 4, "hidden_dynamic_lds_size"),
        (64, 8, "hidden_hostcall_buffer")])
    segment = launch_hip.kernarg_bytes(info, args, (5, 3, 1), (256, 1, 1), 1024)
    assert len(segment) == 80
    assert struct.unpack_from("<QfiIIIHHHH", segment, 0) == (0x1234_5678_9ABC, 2.5, -7, 5, 3, 1, 256, 1, 1, 0)
    assert struct.unpack_from("<HxxIQ", segment, 56) == (2, 1024, 0)


def test_specs_differ_by_every_input_that_changes_the_build():
    base = extension.spec_of("m", "decl;", "src", ["f"], extra_cuda_cflags=["-O3"])
    assert base.functions == (("f", "f"),) and base.cuda_sources == ("src",)
    others = [extension.spec_of("m", "decl;", "src2", ["f"], extra_cuda_cflags=["-O3"]),
              extension.spec_of("m", "decl;", "src", ["f", "g"], extra_cuda_cflags=["-O3"]),
              extension.spec_of("m", "decl;", "src", ["f"], extra_cuda_cflags=["-O2"]),
              extension.spec_of("n", "decl;", "src", ["f"], extra_cuda_cflags=["-O3"])]
    assert len({base.key, *(s.key for s in others)}) == 5
    assert extension.spec_of("m", "decl;", ["src"], "f", extra_cuda_cflags=["-O3"]).key == base.key
    main = extension.main_unit(base)
    assert main.startswith("#include <torch/extension.h>\ndecl;") and 'm.def("f", f, "f");' in main


def test_a_fault_kept_by_a_launch_is_raised_after_the_call():
    from harness.emulator.errors import EmulationFault, NotEmulated
    def caught_and_fell_back():  # a launch kept the fault; the submission swallowed the C++ error
        launch_hip._state["fault"] = EmulationFault("lds race", "two waves", "k", "ds_write_b32", "0x40")
        return 1
    with pytest.raises(EmulationFault, match="lds race"):
        launch_hip.checked(caught_and_fell_back)()
    assert launch_hip.fault_status(NotEmulated("v_foo", "k")) == "skip"
    assert launch_hip.fault_status(EmulationFault("out of bounds", "x")) == "fail"
    assert launch_hip.fault_status(ValueError()) is None
    assert launch_hip.checked(lambda: 3)() == 3


SCALE_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <hip/hip_runtime.h>
__global__ void scale_add(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + 1.0f;
}
torch::Tensor scale(torch::Tensor x, double a) {
    auto y = torch::empty_like(x);
    int n = static_cast<int>(x.numel());
    hipLaunchKernelGGL(scale_add, dim3((n + 255) / 256), dim3(256), 0, 0,
                       x.data_ptr<float>(), y.data_ptr<float>(), static_cast<float>(a), n);
    scale_add<<<dim3(1, 2), 64, 512, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), 0.0f, 0);
    return y;
}
"""


class RecordingRunner:
    """The test double for the core: records each launch and does the kernel's arithmetic from the kernarg
    bytes it was given (so wrong pointers or values give a wrong tensor)."""

    def __init__(self):
        self.launches = []

    def __call__(self, code, name, grid, block, kernarg, dynamic_lds=0, memory=None):
        info = code.kernels[name]
        self.launches.append((name, grid, block, dynamic_lds, info.args, kernarg, memory))
        x_at, y_at, a, n = struct.unpack_from("<QQfi", kernarg, 0)
        if n:
            assert memory.region_of(x_at, 4 * n) and memory.region_of(y_at, 4 * n)
            x = np.ctypeslib.as_array((ctypes.c_float * n).from_address(x_at))
            np.ctypeslib.as_array((ctypes.c_float * n).from_address(y_at))[:] = a * x + 1.0
        return SimpleNamespace(wave_instructions=7)


@pytest.mark.emulator_e2e
def test_load_inline_builds_registers_and_launches_through_the_hook(tmp_path, monkeypatch):
    import torch
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    runner = RecordingRunner()
    launch_hip.install()
    launch_hip.set_runner(runner)
    try:
        from torch.utils.cpp_extension import load_inline
        module = load_inline(name="emu_scale_test", cpp_sources="torch::Tensor scale(torch::Tensor x, double a);",
                             cuda_sources=SCALE_SOURCE, functions=["scale"], extra_cuda_cflags=["-O2"])
        x = torch.arange(300, dtype=torch.float32)
        y = launch_hip.checked(module.scale)(x, 3.0)
    finally:
        launch_hip.set_runner(None)
    assert torch.equal(y, 3.0 * x + 1.0)
    (name, grid, block, lds, args, kernarg, _), second = runner.launches
    assert name.startswith("_Z9scale_add") and grid == (2, 1, 1) and block == (256, 1, 1) and lds == 0
    assert [kind for _, _, kind in args[:4]] == ["global_buffer", "global_buffer", "by_value", "by_value"]
    assert struct.unpack_from("<QQfi", kernarg, 0) == (x.data_ptr(), y.data_ptr(), 3.0, 300)
    assert second[1:4] == ((1, 2, 1), (64, 1, 1), 512)
    assert launch_hip.summary()[name]["launches"] == 2
