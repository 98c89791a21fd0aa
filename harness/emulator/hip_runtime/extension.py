"""torch's load_inline without ROCm: a CPU extension whose kernels the
gfx950 emulator runs.

As load_inline on ROCm, the CUDA sources (torch's prefix added) are
hipified and built with the HIP toolchain, the C++ sources get the
pybind bindings of `functions`. Here the device half goes to a gfx950
code object (the existing clang-22 route), wrapped in an offload bundle;
the host half is compiled for the CPU by clang-22 in HIP host-only mode
against the pip torch and the HIP headers, so clang itself emits the
kernel registration and the launch stubs, and it is linked with our
runtime (runtime.cpp). Builds are named by a hash of everything that
goes in and reused from any build folder that holds them.
"""
import concurrent.futures
import dataclasses
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from harness.compile.hip import build as hip_build
from harness.compile.hip import toolchain as hip_toolchain
from harness.emulator.hip_runtime import bundle, library
from harness.emulator.hip_runtime.library import BuildError

RECIPE = "1"  # bump when a build step changes
LOAD_INLINE_PREFIX = ("#include <torch/types.h>\n#include <cuda.h>\n"
                      "#include <cuda_runtime.h>\n")
LINE_FILE = "__harness_submission_file__"  # compile/hip/source.py's
# Line tables let a fault name the kernel's source line.
DEVICE_DEBUG = ["-gline-tables-only"]
# Host code's view of the emulated GPU's tensors (is_cuda(), kCUDA).
EMULATED_DEVICE = Path(__file__).with_name("emulated_device.h")
# What that header must come after: torch's and HIP's own declarations.
HOST_HEADERS = "#include <torch/extension.h>\n#include <hip/hip_runtime.h>\n"
# Sources that name what it rewrites get it (others keep their builds).
ASKS_THE_DEVICE = re.compile(r"\bis_cuda\s*\(\s*\)|\bkCUDA\b")


@dataclasses.dataclass(frozen=True)
class InlineSpec:
    """One load_inline call's inputs, as the build sees them."""
    name: str
    cpp_sources: tuple
    cuda_sources: tuple
    functions: tuple  # (name, docstring) pairs; empty: the source binds
    cuda_flags: tuple
    cflags: tuple

    @property
    def device_view(self) -> str:
        """emulated_device.h's text where the host code needs it."""
        text = "\n".join(self.cpp_sources + self.cuda_sources)
        if ASKS_THE_DEVICE.search(text):
            return EMULATED_DEVICE.read_text()
        return ""

    @property
    def key(self) -> str:
        parts = [RECIPE, dataclasses.astuple(self),
                 hip_toolchain.torch_version(),
                 library.SOURCE.read_text(), library.STREAMS.read_text()]
        if self.device_view:
            parts.append(self.device_view)
        text = json.dumps(parts, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:20]


def _texts(value) -> tuple:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _functions(value) -> tuple:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if isinstance(value, dict):
        return tuple((k, str(v)) for k, v in value.items())
    return tuple((name, name) for name in value)


def spec_of(name, cpp_sources, cuda_sources=None, functions=None,
            extra_cflags=None, extra_cuda_cflags=None, **_) -> InlineSpec:
    """load_inline's arguments (others, such as verbose, do not matter)."""
    return InlineSpec(name=str(name), cpp_sources=_texts(cpp_sources),
                      cuda_sources=_texts(cuda_sources),
                      functions=_functions(functions),
                      cuda_flags=tuple(extra_cuda_cflags or ()),
                      cflags=tuple(extra_cflags or ()))


def bindings(spec: InlineSpec) -> str:
    if not spec.functions:
        return ""
    lines = [f'm.def("{name}", {name}, {json.dumps(doc)});'
             for name, doc in spec.functions]
    return ("\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
            + "\n".join(lines) + "\n}\n")


def main_unit(spec: InlineSpec) -> str:
    """main.cpp as load_inline writes it, the emulated device's view
    of tensors after torch's header."""
    return ("#include <torch/extension.h>\n" + spec.device_view
            + "\n".join(spec.cpp_sources) + bindings(spec))


def host_unit(spec: InlineSpec, hipified: str) -> str:
    """The CUDA unit for its host compile: the same code, host code
    seeing the emulated device's tensors (the device compile takes the
    unit as it is)."""
    if not spec.device_view:
        return hipified
    return HOST_HEADERS + spec.device_view + hipified


def cuda_unit(spec: InlineSpec) -> str:
    return LOAD_INLINE_PREFIX + "\n".join(spec.cuda_sources)


def _common_flags(spec: InlineSpec) -> list[str]:
    return [f"-DTORCH_EXTENSION_NAME={spec.name}",
            "-DTORCH_API_INCLUDE_EXTENSION_H", "-fPIC"]


def device_command(chain, spec, unit: Path, out: Path, lite: bool):
    keyed, file_only, _ = hip_build.split_flags(list(spec.cuda_flags))
    command = hip_build.base_command(chain, "gfx950", lite) + keyed
    return command + file_only + DEVICE_DEBUG + _common_flags(spec) + [
        "-c", str(unit), "-o", str(out)]


def host_command(chain, spec, unit: Path, fatbin: Path, out: Path,
                 lite: bool) -> list[str]:
    """The CUDA unit's host half: clang's registration and stubs."""
    keyed, _, _ = hip_build.split_flags(list(spec.cuda_flags))
    return [str(chain.clang), "-x", "hip", "--cuda-host-only",
            "--offload-arch=gfx950", f"--rocm-path={chain.rocm}", "-nogpulib",
            *chain.include_flags(lite), *hip_build.torch_rocm_defines(),
            "-D__AMDGCN_WAVEFRONT_SIZE=64", *keyed, "-O2",
            *_common_flags(spec), "-Xclang", "-fcuda-include-gpubinary",
            "-Xclang", str(fatbin), "-c", str(unit), "-o", str(out)]


def main_command(chain, spec, unit: Path, out: Path) -> list[str]:
    include, _ = library.torch_paths()
    own = [f for f in spec.cflags if f.startswith(("-D", "-U", "-std="))]
    return [str(chain.clang), "-x", "c++", "-std=c++17", "-O1",
            "-isystem", str(include),
            "-isystem", str(include / "torch/csrc/api/include"),
            "-isystem", str(chain.python_include), *own,
            *_common_flags(spec), "-c", str(unit), "-o", str(out)]


def link_command(chain, spec, objects: list[Path], runtime: Path,
                 out: Path) -> list[str]:
    _, lib = library.torch_paths()
    torch_libs = ["-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"]
    return [str(chain.clang), "-shared", *map(str, objects),
            f"-L{lib}", *torch_libs, f"-Wl,-rpath,{lib}",
            str(runtime), f"-Wl,-rpath,{runtime.parent}",
            "-o", str(out)]


def build(spec: InlineSpec, into: Path, unit_text: str | None = None,
          shown_as: str = "") -> Path:
    """The extension built into `into`/<key>/; returns its .so path.

    unit_text: the CUDA unit with `#line` directives into the .py file
    (the parent's prebuild), shown_as the path they name."""
    chain = hip_toolchain.find()
    runtime = library.built_path(chain, into)
    final = into / spec.key
    with tempfile.TemporaryDirectory(dir=into) as folder:
        work = Path(folder)
        # hipify caches by content; ours must not go in the toolchain's.
        local = dataclasses.replace(chain, cache=work)
        hipified = hip_build.hipify(unit_text or cuda_unit(spec), local)
        hipified = hipified.replace(f'"{LINE_FILE}"', json.dumps(shown_as))
        lite = hip_build.lite_extension(hipified)
        unit, main = work / "cuda.hip", work / "main.cpp"
        unit.write_text(hipified)
        host = work / "host.hip"
        host.write_text(host_unit(spec, hipified))
        main.write_text(main_unit(spec))
        hsaco, fatbin = work / "k.hsaco", work / "k.hipfb"
        cuda_o, main_o = work / "cuda.o", work / "main.o"
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            compiled = pool.submit(library.run, main_command(
                chain, spec, main, main_o), "C++ sources")
            library.run(device_command(chain, spec, unit, hsaco, lite),
                        "device compile for gfx950")
            fatbin.write_bytes(bundle.pack({bundle.HOST: b"",
                                            bundle.GFX950: hsaco.read_bytes()}))
            library.run(host_command(chain, spec, host, fatbin, cuda_o,
                                     lite), "host compile of the HIP unit")
            compiled.result()
        so = work / f"{spec.name}.so"
        library.run(link_command(chain, spec, [main_o, cuda_o], runtime,
                                 so), "link")
        (work / "unit.hip").write_text(hipified)
        keep = work / "kept"
        keep.mkdir()
        for path in (so, hsaco, work / "unit.hip"):
            shutil.copy2(path, keep / path.name)
        try:
            os.replace(keep, final)
        except OSError:  # another process built it first
            shutil.rmtree(keep, ignore_errors=True)
    return final / f"{spec.name}.so"


def built(spec: InlineSpec) -> Path | None:
    for folder in library.build_folders():
        found = folder / spec.key / f"{spec.name}.so"
        if found.is_file():
            return found
    return None


def import_extension(path: Path, name: str):
    """The built .so as the Python module load_inline would return."""
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[name] = module
    return module


def load(spec: InlineSpec):
    """The extension's module, built first when no folder holds it."""
    library.load()
    path = built(spec)
    if path is None:
        started = time.monotonic()
        path = build(spec, library.writable_folder())
        print(f"[gfx950 emulator] built {spec.name} in "
              f"{time.monotonic() - started:.1f} s", file=sys.stderr)
    return import_extension(path, spec.name)
