"""Tiny gfx950 code objects for the emulator's tests: HIP through clang-22 (no ROCm, no HIP
headers: a few builtins stand in for threadIdx and friends), or assembly through llvm-mc-22."""
import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

PRELUDE = """
#define KERNEL extern "C" __attribute__((global))
#define SHARED __attribute__((shared))
#define DEVICE __attribute__((device)) inline
DEVICE int tid() { return __builtin_amdgcn_workitem_id_x(); }
DEVICE int tid_y() { return __builtin_amdgcn_workitem_id_y(); }
DEVICE int bid() { return __builtin_amdgcn_workgroup_id_x(); }
DEVICE int bid_y() { return __builtin_amdgcn_workgroup_id_y(); }
DEVICE void sync() { __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier(); __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup"); }
"""
ASM_HEAD = """.amdgcn_target "amdgcn-amd-amdhsa--gfx950"
.text
.globl {name}
.p2align 8
.type {name},@function
{name}:
"""
ASM_TAIL = """
.section .rodata,"a",@progbits
.p2align 6
.amdhsa_kernel {name}
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_next_free_vgpr {vgprs}
  .amdhsa_next_free_sgpr 96
  .amdhsa_accum_offset {accum}
  .amdhsa_group_segment_fixed_size {lds}
  .amdhsa_system_sgpr_workgroup_id_x 1
.end_amdhsa_kernel
.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.kernels:
  - .name: {name}
    .symbol: {name}.kd
    .kernarg_segment_size: {kernarg}
    .group_segment_fixed_size: {lds}
    .private_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count: 96
    .vgpr_count: {vgprs}
    .max_flat_workgroup_size: 1024
    .args:
{args}
...
.end_amdgpu_metadata
"""


def tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed (make setup installs the LLVM 22 tools)")
    return found


@functools.lru_cache(maxsize=None)
def compile_hip(source: str, extra: tuple[str, ...] = ()) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "k.hip"
        path.write_text(PRELUDE + source)
        out = Path(folder) / "k.co"
        subprocess.run([tool("clang++-22"), "-x", "hip", "--offload-arch=gfx950", "--cuda-device-only",
                        "-nogpulib", "-nogpuinc", "-O3", "-std=c++17", "--no-gpu-bundle-output",
                        *extra, "-c", str(path), "-o", str(out)], check=True, capture_output=True, timeout=120)
        return out.read_bytes()


@functools.lru_cache(maxsize=None)
def assemble(body: str, name: str = "k", pointers: int = 1, lds: int = 0, vgprs: int = 64,
             accum: int | None = None) -> bytes:
    """A kernel from assembly; its kernarg holds `pointers` 8-byte global pointers."""
    args = "\n".join(f"      - {{.offset: {8 * k}, .size: 8, .value_kind: global_buffer, "
                     f".address_space: global}}" for k in range(pointers))
    text = ASM_HEAD.format(name=name) + body + ASM_TAIL.format(
        name=name, vgprs=vgprs, accum=accum or vgprs, lds=lds, kernarg=8 * pointers, args=args)
    with tempfile.TemporaryDirectory() as folder:
        source, obj, co = (Path(folder) / n for n in ("k.s", "k.o", "k.co"))
        source.write_text(text)
        done = subprocess.run([tool("llvm-mc-22"), "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx950",
                               "-filetype=obj", str(source), "-o", str(obj)], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        subprocess.run([tool("ld.lld-22"), "-shared", str(obj), "-o", str(co)], check=True,
                       capture_output=True, timeout=60)
        return co.read_bytes()


def pack_args(*values) -> bytes:
    """Kernel arguments: numpy arrays become their data pointers, ints 4-byte, floats f32."""
    out = bytearray()
    for value in values:
        if isinstance(value, np.ndarray) or hasattr(value, "data_ptr"):
            pointer = value.ctypes.data if isinstance(value, np.ndarray) else value.data_ptr()
            out += b"\0" * (-len(out) % 8) + pointer.to_bytes(8, "little")
        elif isinstance(value, float):
            out += np.float32(value).tobytes()
        else:
            out += int(value).to_bytes(4, "little", signed=value < 0)
    return bytes(out)


def memory_of(*arrays):
    from harness.emulator.memory import HostMemory
    memory = HostMemory()
    for at, array in enumerate(arrays):
        if isinstance(array, np.ndarray):
            memory.add_array(array, f"arg{at}")
        else:
            memory.add_tensor(array, f"arg{at}")
    return memory
