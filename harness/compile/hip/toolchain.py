"""The HIP toolchain for compiling load_inline sources for gfx950/gfx942 on a machine without ROCm.

Everything third-party lives in a cache folder, never in the repository (DESIGN section 7, issue 14):
- Debian's clang-22 / lld-22 / llvm-22 (apt, bookworm-security): the compiler, linker and objdump;
- HIP 6.2 headers and ocml/ockl bitcode from PyPI's triton 3.5.1 wheel (downloaded, 3.3 MB extracted,
  the 170 MB wheel deleted; triton >= 3.6 dropped the fp16/bf16/fp8 headers);
- in front of those, the HIP 7.x runtime headers the installed triton carries (triton 3.9: HIP 7.1.25424, the
  runner's ROCm 7.1), so only the fp16/bf16/fp8 type headers come from HIP 6.2;
- the one-constant oclc_*.bc device libraries, an empty opencl.bc and a HIP version file, written here;
- a c10/hip + ATen/hip overlay made by torch's own hipify from the pip torch's c10/cuda and ATen/cuda,
  plus declaration-only stubs for the few ROCm library headers those include, which include the HIP headers the
  real ones include (so a type the runner's headers bring in, hip_bfloat16, is there too).

`python -m harness.compile.hip.toolchain setup` makes it (idempotent); `status` says what is there.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

LLVM_VERSION = "22"
APT_PACKAGES = [f"clang-{LLVM_VERSION}", f"lld-{LLVM_VERSION}", f"llvm-{LLVM_VERSION}"]
TRITON_WHEEL = "triton==3.5.1"  # the last wheel that carries the HIP fp16/bf16/fp8 headers
ARCHS = ("950", "942")  # gfx950 (MI355X) and gfx942 (MI300X)
RECIPE = "1"  # bump when what setup writes changes, so older caches are redone
HOW_TO_GET = "run `make setup` (as root where apt is available: it installs clang-22 and builds the cache)"


class ToolchainMissing(RuntimeError):
    """The toolchain is not (fully) there; the message is one line saying how to get it."""


def cache_root() -> Path:
    """$HARNESS_HIP_CACHE, else $XDG_CACHE_HOME/amd-mixed-mla/hip, else ~/.cache/amd-mixed-mla/hip."""
    if os.environ.get("HARNESS_HIP_CACHE"):
        return Path(os.environ["HARNESS_HIP_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "amd-mixed-mla" / "hip"


def llvm_tool(name: str) -> Path | None:
    """clang++ / llvm-objdump / llvm-as ... of LLVM 22: `name-22` on PATH or in /usr/lib/llvm-22/bin."""
    found = shutil.which(f"{name}-{LLVM_VERSION}")
    if found:
        return Path(found)
    candidate = Path(f"/usr/lib/llvm-{LLVM_VERSION}/bin/{name}")
    return candidate if candidate.is_file() else None


def torch_dir() -> Path | None:
    """The installed torch package folder, found without importing torch (that takes seconds)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def torch_version() -> str:
    return _version("torch")


def newer_hip_headers() -> Path | None:
    """The installed triton's HIP headers when they are HIP 7 or newer (its hip/ has no fp16/bf16/fp8 types)."""
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    include = Path(list(spec.submodule_search_locations)[0]) / "backends" / "amd" / "include"
    try:
        major = int(hip_version(include.parent).split(".")[0])
    except (OSError, AttributeError):
        return None
    return include if major >= 7 else None


def installed_copy(package: str, folder: Path, root: Path) -> Path:
    """`folder` of an installed package as a copy beside the cache, named by the hashes
    pip recorded for its files: venvs with the same files compile from one path, so one precompiled header serves
    them all (a fresh clone builds none). The folder itself when its files are unrecorded or nothing can write."""
    try:
        dist = importlib.metadata.distribution(package)
        prefix = folder.relative_to(Path(dist.locate_file(""))).as_posix() + "/"
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return folder
    lines = sorted(line for line in (dist.read_text("RECORD") or "").splitlines() if line.startswith(prefix))
    if not lines or any(",sha256=" not in line for line in lines):
        return folder
    target = root.parent / "installed" / f"{package}-{hashlib.sha256(chr(10).join(lines).encode()).hexdigest()[:16]}"
    if not target.is_dir():
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=target.parent) as staging:
                shutil.copytree(folder, Path(staging) / "copy" / prefix)
                os.rename(Path(staging) / "copy", target)  # whole or not at all; a racing copier's rename fails
        except OSError:
            return target / prefix if target.is_dir() else folder
    return target / prefix


def python_include() -> Path:
    import sysconfig

    return Path(sysconfig.get_path("include", scheme="posix_prefix"))


@dataclasses.dataclass(frozen=True)
class Toolchain:
    clang: Path
    objdump: Path
    cxxfilt: Path | None
    rocm: Path  # --rocm-path: include/, amdgcn/bitcode/, share/hip/version
    stubs: Path
    newer_hip: Path | None  # the installed triton's HIP 7.x headers, searched before rocm/include
    overlay: Path  # c10/hip and ATen/hip for this torch version
    shadow: Path  # torch/extension.h without the C++ frontend (see write_shadow_extension)
    torch_include: Path
    python_include: Path
    torch_version: str
    cache: Path

    def include_flags(self, lite_extension: bool) -> list[str]:
        """-isystem dirs in the order load_inline's hipcc sees them, our overlay and stubs added."""
        dirs = [self.shadow] if lite_extension else []
        dirs += [self.overlay, self.torch_include, self.torch_include / "torch" / "csrc" / "api" / "include",
                 self.python_include, self.stubs, *filter(None, [self.newer_hip]), self.rocm / "include"]
        return [flag for d in dirs for flag in ("-isystem", str(d))]

    @property
    def hip_version(self) -> str:
        """The version of the HIP runtime headers a compile sees first (hip/hip_version.h)."""
        return hip_version(self.newer_hip.parent if self.newer_hip else self.rocm)

    def headers_note(self) -> str:
        """Which HIP headers a compile uses, with their versions and where they came from."""
        base = f"HIP {hip_version(self.rocm)} headers ({TRITON_WHEEL} wheel)"
        if self.newer_hip is None:
            return base
        return (f"HIP {self.hip_version} runtime headers (the installed triton {_version('triton')}) over {base} "
                "for the fp16/bf16/fp8 types")


def find() -> Toolchain:
    """The ready toolchain; builds the torch-version overlay on first use; raises ToolchainMissing."""
    clang, objdump = llvm_tool("clang++"), llvm_tool("llvm-objdump")
    if clang is None or objdump is None or llvm_tool("ld.lld") is None:
        raise ToolchainMissing(f"clang-{LLVM_VERSION}/lld-{LLVM_VERSION}/llvm-{LLVM_VERSION} not found: {HOW_TO_GET}")
    root = cache_root()
    if not (root / "rocm" / f".complete-{RECIPE}").is_file():
        raise ToolchainMissing(f"HIP headers and device libraries not in {root}: {HOW_TO_GET}")
    torch = torch_dir()
    if torch is None:
        raise ToolchainMissing("torch is not importable here; its headers are needed: run `make setup`")
    folder = root / f"torch-{torch_version()}"
    if not (folder / f".complete-{RECIPE}").is_file():
        build_overlay(torch, folder)
    stubs = stubs_dir(root)
    if not stubs.is_dir():
        write_stubs(stubs)
    newer_hip = newer_hip_headers()
    return Toolchain(clang=clang, objdump=objdump, cxxfilt=llvm_tool("llvm-cxxfilt"), rocm=root / "rocm",
                     stubs=stubs, newer_hip=newer_hip and installed_copy("triton", newer_hip, root),
                     overlay=folder / "overlay", shadow=folder / "shadow",
                     torch_include=installed_copy("torch", torch / "include", root), python_include=python_include(),
                     torch_version=torch_version(), cache=root)


# ---------------------------------------------------------------------------
# Set-up steps; each returns None when done, else a line saying what is missing and why
# ---------------------------------------------------------------------------

def install_llvm(say=print) -> str | None:
    """apt-get install clang-22 lld-22 llvm-22 (apt-get update first when apt does not know them)."""
    if all(llvm_tool(t) for t in ("clang++", "ld.lld", "llvm-objdump", "llvm-as")):
        return None
    packages = " ".join(APT_PACKAGES)
    if not shutil.which("apt-get"):
        return f"{packages}: no apt-get on this machine; install LLVM {LLVM_VERSION} (clang, lld, llvm tools) yourself"
    if os.geteuid() != 0:
        return f"{packages}: not root; run `sudo apt-get install -y {packages}`"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    policy = subprocess.run(["apt-cache", "policy", APT_PACKAGES[0]], capture_output=True, text=True, env=env).stdout
    if "Candidate:" not in policy or "Candidate: (none)" in policy:
        say("apt-get update (apt does not know clang-22 yet)")
        subprocess.run(["apt-get", "update", "-q"], capture_output=True, text=True, env=env)
    say(f"apt-get install -y {packages}")
    result = subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *APT_PACKAGES],
                            capture_output=True, text=True, env=env)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{packages}: apt-get install failed ({last}); Debian ships them in bookworm-security"
    return None


def fetch_hip_headers(rocm: Path, say=print) -> str | None:
    """HIP headers and ocml/ockl bitcode out of the triton wheel; the wheel itself is deleted afterwards."""
    if (rocm / "include" / "hip" / "hip_fp8.h").is_file() and (rocm / "amdgcn" / "bitcode" / "ocml.bc").is_file():
        return None
    say(f"pip download --no-deps {TRITON_WHEEL} (170 MB; only the HIP headers and two bitcode files are kept)")
    with tempfile.TemporaryDirectory() as folder:
        result = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                                 TRITON_WHEEL, "-d", folder], capture_output=True, text=True)
        wheels = list(Path(folder).glob("triton-*.whl"))
        if result.returncode != 0 or not wheels:
            last = (result.stderr.strip().splitlines() or ["no wheel"])[-1]
            return f"HIP headers: pip download {TRITON_WHEEL} failed ({last})"
        with zipfile.ZipFile(wheels[0]) as wheel:
            for member in wheel.namelist():
                if member.endswith("/"):
                    continue
                if member.startswith("triton/backends/amd/include/"):
                    target = rocm / "include" / member[len("triton/backends/amd/include/"):]
                elif member in ("triton/backends/amd/lib/ocml.bc", "triton/backends/amd/lib/ockl.bc"):
                    target = rocm / "amdgcn" / "bitcode" / Path(member).name
                else:
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(wheel.read(member))
    return None


# Each oclc_*.bc holds one constant the device libraries read; clang links the ones matching the compile.
_OCLC_BOOLEANS = {"finite_only": "__oclc_finite_only_opt", "unsafe_math": "__oclc_unsafe_math_opt",
                  "daz_opt": "__oclc_daz_opt", "correctly_rounded_sqrt": "__oclc_correctly_rounded_sqrt32"}


def _constant(name: str, bits: int, value: int) -> str:
    align = bits // 8
    return f"@{name} = linkonce_odr hidden local_unnamed_addr addrspace(4) constant i{bits} {value}, align {align}\n"


def write_device_libraries(rocm: Path, say=print) -> str | None:
    """oclc_*.bc from tiny .ll sources through llvm-as-22, an empty opencl.bc, and share/hip/version."""
    bitcode = rocm / "amdgcn" / "bitcode"
    llvm_as, clang = llvm_tool("llvm-as"), llvm_tool("clang")
    if llvm_as is None or clang is None:
        return f"device libraries: llvm-as-{LLVM_VERSION} / clang-{LLVM_VERSION} missing"
    probe = subprocess.run([str(clang), "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx950", "-nogpulib", "-x", "c", "-S",
                            "-emit-llvm", "-o", "-", "/dev/null"], capture_output=True, text=True)
    header = "".join(line + "\n" for line in probe.stdout.splitlines() if line.startswith("target "))
    sources = {f"oclc_isa_version_{arch}": _constant("__oclc_ISA_version", 32, int(arch) * 10) for arch in ARCHS}
    sources |= {f"oclc_abi_version_{v}": _constant("__oclc_ABI_version", 32, v) for v in (500, 600)}
    for stem, symbol in _OCLC_BOOLEANS.items():
        for state, value in (("on", 1), ("off", 0)):
            sources[f"oclc_{stem}_{state}"] = _constant(symbol, 8, value)
    for state, wave64, log2 in (("on", 1, 6), ("off", 0, 5)):
        sources[f"oclc_wavefrontsize64_{state}"] = (_constant("__oclc_wavefrontsize64", 8, wave64)
                                                    + _constant("__oclc_wavefrontsize_log2", 32, log2))
    sources["opencl"] = ""  # clang insists the file exists; HIP code needs nothing from it
    bitcode.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        for stem, body in sources.items():
            source = Path(folder) / f"{stem}.ll"
            source.write_text(header + body)
            result = subprocess.run([str(llvm_as), str(source), "-o", str(bitcode / f"{stem}.bc")],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                return f"device libraries: llvm-as failed on {stem}.ll: {result.stderr.strip()[:200]}"
    parts = dict(zip(("MAJOR", "MINOR", "PATCH"), hip_version(rocm).split(".")))
    # Without this file clang assumes HIP 3.5 and leaves out its HIP runtime wrapper (math functions).
    (rocm / "share" / "hip").mkdir(parents=True, exist_ok=True)
    (rocm / "share" / "hip" / "version").write_text("".join(f"HIP_VERSION_{k}={v}\n" for k, v in parts.items()))
    return None


def hip_version(rocm: Path) -> str:
    """'6.2.41134': the version of the HIP headers in rocm/include (any folder holding include/hip/hip_version.h)."""
    text = (rocm / "include" / "hip" / "hip_version.h").read_text()
    return ".".join(re.search(rf"#define HIP_VERSION_{k} (\d+)", text).group(1) for k in ("MAJOR", "MINOR", "PATCH"))


# Declaration-only stand-ins for headers the hipified torch headers include but device code never uses. Each first
# includes the HIP headers the real ROCm header includes, so the types they bring in are there as on the runner:
# - rocThrust's thrust/complex.h -> thrust/detail/type_traits.h -> rocprim/type_traits.hpp -> rocprim/config.hpp,
#   which includes hip/hip_bfloat16.h, hip/hip_fp16.h, hip/hip_runtime.h (ROCm/rocm-libraries
#   projects/rocprim/rocprim/include/rocprim/config.hpp at 027c8b37b4231cae2f318f2776526865e848e291; the chain from
#   torch's headeronly/util/complex.h through it is in a ROCm 7.0.0 build log quoted in ROCm/rccl pull request 2107);
# - hipblaslt/hipblaslt.h includes hip/hip_bfloat16.h, hip_complex.h, hip_runtime.h, hip_runtime_api.h, hip_version.h
#   (ROCm/rocm-libraries projects/hipblaslt/library/include/hipblaslt/hipblaslt.h at
#   006d2e0ffee296bb4b0b5af671a69866880e17fc);
# - hipblas/hipblas.h includes hip/hip_complex.h, hip_runtime_api.h, library_types.h (projects/hipblas/library/
#   include/hipblas.h at 07f33d227e742e69cc7e90b42a13a6de5c695a68; hip_bfloat16.h only with HIPBLAS_USE_HIP_BFLOAT16).
# torch's ATen/hip/HIPContextLight.h includes the last two.
_STUBS = {
    "thrust/complex.h": """// c10::complex converts to and from thrust::complex; declarations are all it needs.
#pragma once
#include <hip/hip_bfloat16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
namespace thrust {
template <typename T> struct complex {
  __host__ __device__ complex(const T& re = T(), const T& im = T());
  template <typename U> __host__ __device__ complex(const complex<U>& other);
  __host__ __device__ T real() const;
  __host__ __device__ T imag() const;
};
template <typename T> __host__ __device__ T abs(const complex<T>& z);
template <typename T> __host__ __device__ complex<T> polar(const T& r, const T& theta);
template <typename T, typename U> __host__ __device__ complex<T> pow(const complex<T>& a, const complex<U>& b);
template <typename T, typename U> __host__ __device__ complex<T> pow(const complex<T>& a, const U& b);
template <typename T, typename U> __host__ __device__ complex<U> pow(const T& a, const complex<U>& b);
""" + "".join(f"template <typename T> __host__ __device__ complex<T> {name}(const complex<T>& z);\n"
              for name in ("exp", "log", "log10", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                           "cosh", "tanh", "asinh", "acosh", "atanh", "proj")) + "}  // namespace thrust\n",
    "hipblas/hipblas.h": "#pragma once\n#include <hip/hip_complex.h>\n#include <hip/hip_runtime_api.h>\n"
                         "#include <hip/library_types.h>\ntypedef struct hipblasContext* hipblasHandle_t;\n"
                         "typedef enum { HIPBLAS_STATUS_SUCCESS = 0 } hipblasStatus_t;\n",
    "hipsparse/hipsparse.h": "#pragma once\ntypedef struct hipsparseContext* hipsparseHandle_t;\n"
                             "typedef enum { HIPSPARSE_STATUS_SUCCESS = 0 } hipsparseStatus_t;\n",
    "hipblaslt/hipblaslt.h": "#pragma once\n" + "".join(f"#include <hip/{name}.h>\n" for name in (
        "hip_bfloat16", "hip_complex", "hip_runtime", "hip_runtime_api", "hip_version"))
                             + "typedef struct hipblasLtContext* hipblasLtHandle_t;\n",
    "hipsolver/hipsolver.h": "#pragma once\ntypedef struct hipsolverDnContext* hipsolverDnHandle_t;\n"
                             "typedef enum { HIPSOLVER_STATUS_SUCCESS = 0 } hipsolverStatus_t;\n",
}


def stubs_dir(root: Path) -> Path:
    """The stubs' folder, named by their content: a change gives a new folder (and new PCHs), never a stale one."""
    digest = hashlib.sha256(repr(sorted(_STUBS.items())).encode()).hexdigest()[:12]
    return root / f"stubs-{digest}"


def write_stubs(stubs: Path) -> None:
    for relative, text in _STUBS.items():
        path = stubs / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


# Files a ROCm build of torch generates with cmake; the hipified headers include them.
_GENERATED = {
    "c10/hip/impl/hip_cmake_macros.h": "#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n",
    "ATen/hip/HIPConfig.h": "#pragma once\n#define AT_CUDNN_ENABLED() 0\n#define AT_CUSPARSELT_ENABLED() 0\n"
                            "#define AT_HIPSPARSELT_ENABLED() 0\n#define AT_ROCM_ENABLED() 1\n#define AT_MAGMA_ENABLED() 0\n",
}
# The C++ frontend's template-heavy parts (module and optimizer classes): ~5 s per file for device code never using them.
HEAVY_FRONTEND = ("torch/nn.h", "torch/optim.h", "torch/data.h", "torch/serialize.h")


def build_overlay(torch: Path, folder: Path, say=print) -> None:
    """c10/hip + ATen/hip hipified from the pip torch's c10/cuda + ATen/cuda, and the lighter torch/extension.h."""
    import contextlib
    import io

    from torch.utils.hipify import hipify_python  # torch's own hipify: the same renames a ROCm torch ships

    say(f"hipify torch {torch_version()}'s c10/cuda and ATen/cuda headers into {folder}")
    include = torch / "include"
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch)
        for part in ("c10/cuda", "ATen/cuda"):
            shutil.copytree(include / part, source / part)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            hipify_python.hipify(project_directory=str(source), output_directory=str(source),
                                 includes=[str(source) + "/*"], extensions=(".h", ".cuh", ".hpp"),
                                 header_extensions=(".h", ".cuh", ".hpp"), show_detailed=False,
                                 show_progress=False, is_pytorch_extension=False)
        overlay = folder / "overlay"
        shutil.rmtree(overlay, ignore_errors=True)
        for part in ("c10/hip", "ATen/hip"):
            shutil.copytree(source / part, overlay / part)
    for relative, text in _GENERATED.items():
        (overlay / relative).parent.mkdir(parents=True, exist_ok=True)
        (overlay / relative).write_text(text)
    write_shadow_extension(include, folder / "shadow")
    (folder / f".complete-{RECIPE}").write_text(torch_version() + "\n")


def write_shadow_extension(include: Path, shadow: Path) -> None:
    """torch/extension.h as torch writes it, minus the HEAVY_FRONTEND headers of torch/all.h."""
    all_h = (include / "torch" / "csrc" / "api" / "include" / "torch" / "all.h").read_text()
    kept = [f"#include <{name}>" for name in re.findall(r"#include <([^>]+)>", all_h) if name not in HEAVY_FRONTEND]
    text = ("// harness: torch/extension.h for device compiles; leaves out " + ", ".join(HEAVY_FRONTEND) + "\n"
            "#pragma once\n" + "\n".join(kept) + "\n#include <torch/python.h>\n")
    (shadow / "torch").mkdir(parents=True, exist_ok=True)
    (shadow / "torch" / "extension.h").write_text(text)


def setup(say=print) -> list[str]:
    """Make the whole toolchain; returns what could not be made (empty when all is there)."""
    root = cache_root()
    rocm = root / "rocm"
    missing = []
    problem = install_llvm(say)
    if problem:
        missing.append(problem)
    if not (rocm / f".complete-{RECIPE}").is_file():
        problem = fetch_hip_headers(rocm, say)
        if not problem and not missing:
            problem = write_device_libraries(rocm, say)
            if not problem:
                write_stubs(stubs_dir(root))
                (rocm / f".complete-{RECIPE}").write_text(TRITON_WHEEL + "\n")
        if problem:
            missing.append(problem)
    torch = torch_dir()
    if torch is None:
        missing.append("torch: not importable, so no c10/hip + ATen/hip overlay")
    elif not (root / f"torch-{torch_version()}" / f".complete-{RECIPE}").is_file():
        build_overlay(torch, root / f"torch-{torch_version()}", say)
    if not (python_include() / "Python.h").is_file():
        missing.append(f"Python.h: not in {python_include()}; torch/extension.h needs it (apt-get install python3-dev)")
    return missing


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "status"
    if command == "setup":
        try:
            missing = setup(lambda line: print(f"[hip toolchain] {line}", flush=True))
        except Exception as error:  # set-up must not stop `make setup`; the HIP compile tests will say it is missing
            missing = [f"set-up stopped: {type(error).__name__}: {error}"]
        for line in missing:
            print(f"[hip toolchain] MISSING: {line}", flush=True)
        if not missing:
            print(f"[hip toolchain] ready in {cache_root()}")
        return 1 if missing and "--strict" in argv else 0
    if command == "status":
        try:
            chain = find()
        except ToolchainMissing as error:
            print(f"HIP toolchain: missing: {error}")
            return 1
        print(f"HIP toolchain: {chain.clang} with {chain.headers_note()}, torch {chain.torch_version}, "
              f"cache {chain.cache}")
        return 0
    print("usage: python -m harness.compile.hip.toolchain setup [--strict] | status", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
