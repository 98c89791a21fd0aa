"""amd-aiter's MLA metadata and reduce modules, built from the pinned wheel's own sources for the gfx950 emulator.

What is compiled is the package's: `kernels/mla/metadata.cu` (with
metadata/v1_*.cuh) and `kernels/mla/reduce.cu`, each with its pybind
unit, exactly as aiter's JIT (aiter/jit/core.py) lists them in
optCompilerConfig.json (module_mla_metadata, module_mla_reduce).
- Device code: clang-22 for gfx950 with aiter's own HIP flags (below)
  and the HIP headers of harness/compile/hip/toolchain.py; the code
  object goes into an offload bundle, as in a load_inline build.
- Host code (the launch set-up, buffer checks, dispatch): the same
  sources compiled for the CPU in HIP host-only mode and linked with
  our HIP runtime (harness/emulator/hip_runtime), so each launch runs
  on the emulator (harness.emulator.launch.run_kernel).
Three things ours adds, none of them aiter's logic (HOST_SHIMS):
a device guard that accepts the CPU tensors the emulated GPU holds,
c10's HIP allocator handle and check, and hipStreamIsCapturing, which
our runtime lacks. A build takes minutes (reduce.cu: ~10 on 2 cores);
it is cached by content in the emulator's build folders.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import os
import pwd
import sys
import tempfile
import time
from pathlib import Path

from harness.aiter_gfx950 import package
from harness.compile.hip import build as hip_build
from harness.compile.hip import toolchain as hip_toolchain
from harness.emulator.hip_runtime import bundle, extension, library

RECIPE = "1"  # bump when a step below changes
# module -> (kernel unit, pybind unit), under the wheel's aiter_meta/csrc/
MODULES = {
    "module_mla_metadata": ("kernels/mla/metadata.cu", "pybind/mla_metadata_pybind.cu"),
    "module_mla_reduce": ("kernels/mla/reduce.cu", "pybind/mla_reduce_pybind.cu"),
}
# aiter/jit/core.py's flags_hip for HIP 7.1 on gfx950, less one option
# upstream LLVM lacks (-amdgpu-coerce-illegal-types=1: ROCm's fork only).
AITER_DEFINES = [
    "-DLEGACY_HIPBLAS_DIRECT", "-DUSE_PROF_API=1", "-D__HIP_PLATFORM_HCC__=1",
    "-D__HIP_PLATFORM_AMD__=1", "-U__HIP_NO_HALF_CONVERSIONS__",
    "-U__HIP_NO_HALF_OPERATORS__", "-D__Float4_e2m1fn_x2",
    "-Wno-unused-result", "-Wno-switch-bool", "-Wno-vla-cxx-extension",
    "-Wno-undefined-func-template", "-Wno-macro-redefined",
    "-Wno-missing-template-arg-list-after-template-kw",
]
AITER_DEVICE_FLAGS = [
    "-fgpu-flush-denormals-to-zero", "-fno-offload-uniform-block",
    *[flag for option in ("--amdgpu-kernarg-preload-count=16", "--lsr-drop-solution=1",
                          "-enable-post-misched=0", "-amdgpu-early-inline-all=true",
                          "-amdgpu-function-calls=false")
      for flag in ("-mllvm", option)],
]
# core.py's include folders, under aiter_meta/
INCLUDES = ("csrc/include", "csrc/include/torch", "3rdparty/composable_kernel/include",
            "3rdparty/composable_kernel/library/include")
GUARD_HEADER = "ATen/hip/impl/HIPGuardImplMasqueradingAsCUDA.h"
HOST_SHIMS = {
    # torch's guard, renamed, then one that sets nothing on the CPU device our tensors live on
    GUARD_HEADER: """#pragma once
#define OptionalHIPGuardMasqueradingAsCUDA OptionalHIPGuardMasqueradingAsCUDA_OnAGpu
#include_next <ATen/hip/impl/HIPGuardImplMasqueradingAsCUDA.h>
#undef OptionalHIPGuardMasqueradingAsCUDA
namespace c10 { namespace hip {
// The emulator has one device and its tensors are CPU tensors: nothing to switch.
struct OptionalHIPGuardMasqueradingAsCUDA final {
  explicit OptionalHIPGuardMasqueradingAsCUDA(std::optional<c10::Device>) {}
};
}}  // namespace c10::hip
""",
    "harness_aiter_shims.cpp": """// Symbols aiter's host code links against that the pip torch and our runtime lack.
#include <c10/hip/HIPCachingAllocator.h>
#include <c10/hip/HIPException.h>
#include <hip/hip_runtime_api.h>
namespace c10::cuda::CUDACachingAllocator {
std::atomic<CUDAAllocator*> allocator{nullptr};
}
namespace c10::cuda {
void c10_cuda_check_implementation(const int32_t err, const char* file, const char* function,
                                   const uint32_t line, const bool) {
  TORCH_CHECK(err == 0, "HIP error ", err, " in ", function, " at ", file, ":", line);
}
}  // namespace c10::cuda
// Nothing is captured on the emulator: every stream runs work when it is issued.
hipError_t hipStreamIsCapturing(hipStream_t, hipStreamCaptureStatus* status) {
  *status = hipStreamCaptureStatusNone;
  return hipSuccess;
}
""",
}


class AiterBuildError(RuntimeError):
    """The package's sources could not be built here; the message says what stopped it."""


def package_root() -> Path:
    """The unpacked wheel's aiter_meta/, with the CK headers the sources include."""
    problem = package.missing()
    if problem:
        raise AiterBuildError(problem)
    root = package.cache_root() / "aiter_meta"
    ck = root / INCLUDES[2] / "ck_tile" / "core.hpp"
    if not ck.is_file():
        raise AiterBuildError(f"{ck} is missing: aiter's metadata and reduce sources include "
                              "composable_kernel's ck_tile headers (the wheel's aiter_meta/3rdparty/"
                              "composable_kernel/include); unpack them beside csrc/")
    return root


def _include_flags(root: Path) -> list[str]:
    return [flag for folder in INCLUDES for flag in ("-I", str(root / folder))]


def key(module: str) -> str:
    """Names a build by everything that goes in (the wheel is pinned by its sha256)."""
    chain = hip_toolchain.find()
    parts = [RECIPE, module, MODULES[module], package.pinned()["package"]["wheel_sha256"],
             AITER_DEFINES, AITER_DEVICE_FLAGS, HOST_SHIMS, chain.torch_version, str(chain.clang),
             library.soname(chain)]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:20]


def _module_flags(module: str) -> list[str]:
    return ["-std=c++20", f"-DTORCH_EXTENSION_NAME={module}", "-DTORCH_API_INCLUDE_EXTENSION_H", "-fPIC"]


def device_command(chain, root: Path, unit: Path, out: Path, module: str) -> list[str]:
    return (hip_build.base_command(chain, "gfx950", True) + ["-O3", *_module_flags(module), *AITER_DEFINES,
            *AITER_DEVICE_FLAGS, *_include_flags(root), *extension.DEVICE_DEBUG, "-c", str(unit), "-o", str(out)])


def host_command(chain, root: Path, shims: Path, unit: Path, out: Path, module: str,
                 fatbin: Path | None) -> list[str]:
    """A unit's host half for the CPU; with `fatbin`, clang registers its kernels and emits launch stubs."""
    embed = ["-Xclang", "-fcuda-include-gpubinary", "-Xclang", str(fatbin)] if fatbin else []
    return [str(chain.clang), "-x", "hip", "--cuda-host-only", "--offload-arch=gfx950",
            f"--rocm-path={chain.rocm}", "-nogpulib", "-I", str(shims), *chain.include_flags(True),
            *hip_build.torch_rocm_defines(), "-D__AMDGCN_WAVEFRONT_SIZE=64", "-O2", *_module_flags(module),
            *AITER_DEFINES, *_include_flags(root), *embed, "-c", str(unit), "-o", str(out)]


def shim_command(chain, shims: Path, out: Path) -> list[str]:
    include, _ = library.torch_paths()
    return [str(chain.clang), "-x", "c++", "-std=c++17", "-O1", "-fPIC", "-D__HIP_PLATFORM_AMD__=1",
            "-DUSE_ROCM=1", "-isystem", str(chain.overlay), *library.hip_includes(chain), "-isystem",
            str(include), "-c", str(shims / "harness_aiter_shims.cpp"), "-o", str(out)]


def _write_shims(folder: Path) -> Path:
    shims = folder / "shims"
    for relative, text in HOST_SHIMS.items():
        (shims / relative).parent.mkdir(parents=True, exist_ok=True)
        (shims / relative).write_text(text)
    return shims


def build(module: str, into: Path) -> Path:
    """Build `module` into `into`/aiter-<key>/; returns its .so."""
    root, chain = package_root(), hip_toolchain.find()
    kernel_unit, pybind_unit = (root / "csrc" / relative for relative in MODULES[module])
    runtime = library.built_path(chain, into)
    final = into / f"aiter-{key(module)}"
    into.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=into) as folder:
        work = Path(folder)
        shims = _write_shims(work)
        hsaco, fatbin = work / "k.hsaco", work / "k.hipfb"
        kernel_o, pybind_o, shim_o = work / "kernel.o", work / "pybind.o", work / "shims.o"
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            side = [pool.submit(library.run, host_command(chain, root, shims, pybind_unit, pybind_o, module,
                                                          None), f"{module}: host compile of {pybind_unit.name}"),
                    pool.submit(library.run, shim_command(chain, shims, shim_o), "the harness's host shims")]
            library.run(device_command(chain, root, kernel_unit, hsaco, module),
                        f"{module}: device compile of {kernel_unit.name} for gfx950")
            fatbin.write_bytes(bundle.pack({bundle.HOST: b"", bundle.GFX950: hsaco.read_bytes()}))
            library.run(host_command(chain, root, shims, kernel_unit, kernel_o, module, fatbin),
                        f"{module}: host compile of {kernel_unit.name}")
            for done in side:
                done.result()
        so = work / f"{module}.so"
        spec = extension.InlineSpec(module, (), (), (), (), ())
        library.run(extension.link_command(chain, spec, [kernel_o, pybind_o, shim_o], runtime, so),
                    f"{module}: link")
        keep = work / "kept"
        keep.mkdir()
        for path in (so, hsaco):
            path.replace(keep / path.name)
        try:
            keep.replace(final)
        except OSError:  # another process built it first
            pass
    return final / f"{module}.so"


def built(module: str) -> Path | None:
    for folder in library.build_folders():
        found = folder / f"aiter-{key(module)}" / f"{module}.so"
        if found.is_file():
            return found
    return None


def code_object(module: str) -> Path:
    """The module's gfx950 code object (its kernels, as the emulator runs them)."""
    path = built(module)
    if path is None:
        raise AiterBuildError(f"{module} is not built: run `python -m harness.aiter_gfx950.build`")
    return path.with_name("k.hsaco")


_loaded: dict = {}
_ran: dict = {"emulated": [], "modelled": []}  # since the last take_lines


def note_ran(name: str) -> None:
    if name not in _ran["emulated"]:
        _ran["emulated"].append(name)


def take_lines() -> list[str]:
    """What ran since the last take, for the case's message (then forgotten): emulated from the wheel's
    sources, or the torch model where they could not be built here (and why)."""
    lines = []
    if _ran["emulated"]:
        lines.append(f"aiter emulated (gfx950; amd-aiter {package.version()} sources built by the harness: "
                     f"{', '.join(_ran['emulated'])}): correctness only")
    lines += [f"aiter modelled in torch: {name} ({why})" for name, why in _ran["modelled"]]
    for kept in _ran.values():
        kept.clear()
    return lines


def note_modelled(api: str, why: str) -> None:
    if (api, why) not in _ran["modelled"]:
        _ran["modelled"].append((api, why))


def load_or_note(module: str, api: str):
    """The built module, or None after noting why it cannot be had here (the caller runs the torch model).
    A call never builds: that takes minutes, past a case's limit; `make setup` builds them once."""
    _find_the_users_hip_cache()
    if module not in _loaded and built(module) is None:
        note_modelled(api, f"{module} is not built here yet (`make setup` builds it from amd-aiter's "
                           "sources once, minutes: python -m harness.aiter_gfx950.build)")
        return None
    try:
        return load(module)
    except (AiterBuildError, hip_toolchain.ToolchainMissing) as error:
        note_modelled(api, str(error))
        return None


def _find_the_users_hip_cache() -> None:
    """A run's child has its own XDG_CACHE_HOME and, unless its file uses HIP, no HARNESS_HIP_CACHE: point it
    at the user's HIP cache (toolchain and prebuilt modules) as package.cache_root looks at the user's home."""
    if os.environ.get("HARNESS_HIP_CACHE"):
        return
    home = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "amd-mixed-mla" / "hip"
    if not (hip_toolchain.cache_root() / "rocm").is_dir() and (home / "rocm").is_dir():
        os.environ["HARNESS_HIP_CACHE"] = str(home)


def load(module: str):
    """The built module (built now, into a writable build folder, where none holds it), its launches emulated."""
    if module not in _loaded:
        _find_the_users_hip_cache()
        from harness.emulator import launch_hip
        path = built(module)
        if path is None:
            started = time.monotonic()
            try:
                path = build(module, library.writable_folder())
            except library.BuildError as error:
                raise AiterBuildError(str(error)) from None
            print(f"[aiter gfx950] built {module} from amd-aiter {package.version()}'s sources in "
                  f"{time.monotonic() - started:.0f} s", file=sys.stderr)
        launch_hip.install()  # our runtime, its launch hook and tensor tracking, before the module's first call
        _loaded[module] = extension.import_extension(path, module)
    return _loaded[module]


@contextlib.contextmanager
def emulated_call(**tensors):
    """The module's launches inside, with the call's tensors as regions (our runtime knows only tensors
    allocated after it was installed, which may be after the caller made these). They take the C fast
    path: it translates only the launched kernel (reduce, 128 tiles x 8 splits: 4.3 s of CPU, numpy 19.9)."""
    from harness.emulator import launch_hip
    with launch_hip.regions(tensors, "aiter call argument"):
        yield


def prebuild() -> list[str]:
    """Build every module into the shared cache (the parent's set-up); one line per failure."""
    folder = hip_toolchain.cache_root() / "emulated"
    problems = []
    for module in MODULES:
        if built(module) is None:
            print(f"[aiter gfx950] building {module} from amd-aiter {package.version()}'s sources "
                  "(once; minutes)", flush=True)
            try:
                build(module, folder)
            except (library.BuildError, AiterBuildError, hip_toolchain.ToolchainMissing) as error:
                problems.append(f"{module}: {error}")
    return problems


if __name__ == "__main__":
    for line in prebuild() or ["aiter gfx950 modules ready"]:
        print(f"[aiter gfx950] {line}")
