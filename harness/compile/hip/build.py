"""How a load_inline translation unit is built for gfx950 / gfx942: the clang command, and its two caches.

The command carries the flags torch's load_inline gives hipcc on ROCm (read from the installed torch), hipcc's
own defaults, and the file's extra_cuda_cflags. Two steps are cached in the toolchain's folder: torch's hipify of
the unit (by content), and a precompiled header of the torch headers per (arch, flags that change parsing),
built on first use (~20-50 s, ~150 MB) so that later compiles take a few seconds.
"""
from __future__ import annotations

import ast
import contextlib
import fcntl
import functools
import hashlib
import io
import json
import os
import re
import subprocess
import tempfile
import threading
from pathlib import Path

from harness.compile.hip import source as hip_source
from harness.compile.hip import toolchain as hip_toolchain

# Flags that may differ between the PCH and the file using it (checked with clang 22); all others key the PCH.
_TU_ONLY = re.compile(r"^(-ffp-contract=|-fgpu-flush-denormals-to-zero|-fno-gpu-flush-denormals-to-zero|"
                      r"-munsafe-fp-atomics|-mno-unsafe-fp-atomics|-W|-w$|-Rpass)")
_KEPT = re.compile(r"^(-O|-std=|-D|-U|-f|-m|-W|-w$)")
_DROPPED_EXACT = {"-fgpu-rdc", "-fno-gpu-rdc", "-c", "-v", "-save-temps", "--save-temps"}
# clang's words for a precompiled header it will not use; the compile is then retried without one.
PCH_TROUBLE = re.compile(r"precompiled (file|header)|PCH file|AST file", re.IGNORECASE)
_HIPIFY_LOCK = threading.Lock()
MAX_PCH_FILES = 6  # ~150 MB each; the least recently used go first
DIAGNOSTIC = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<kind>fatal error|error|warning): "
                         r"(?P<message>.*)$", re.MULTILINE)


# ---------------------------------------------------------------------------
# Flags
# ---------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def torch_rocm_defines() -> list[str]:
    """The -D flags torch's cpp_extension gives hipcc on ROCm, read from its source (importing torch is slow)."""
    torch = hip_toolchain.torch_dir()
    tree = hip_source.parse_python((torch / "utils" / "cpp_extension.py").read_text())
    flags = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") in ("COMMON_HIP_FLAGS", "COMMON_HIPCC_FLAGS")
                                                for t in node.targets):
            flags += [e.value for e in getattr(node.value, "elts", []) if isinstance(e, ast.Constant)]
    return [f for f in flags if f.startswith("-D")] + ["-DWITH_HIP", "-DTORCH_API_INCLUDE_EXTENSION_H"]


def split_flags(user_flags: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(flags for the PCH and the file, flags for the file only, flags ignored) from extra_cuda_cflags.

    hipcc's own defaults are added: -O3 without an -O flag, and its inlining options unless -O0.
    """
    keyed, file_only, ignored = ["-std=c++20"], [], []  # torch passes -std=c++20; a later -std wins
    flags = iter(user_flags)
    for flag in flags:
        if flag == "-mllvm":
            file_only += [flag, next(flags, "")]
        elif flag.startswith(("--offload-arch", "--amdgpu-target")) or flag in _DROPPED_EXACT or not _KEPT.match(flag):
            ignored.append(flag)
        elif _TU_ONLY.match(flag):
            file_only.append(flag)
        else:
            keyed.append(flag)
    level = ([f for f in keyed if f.startswith("-O")] or ["-O3"])[-1]
    if level != "-O0":
        file_only += ["-mllvm", "-amdgpu-early-inline-all=true", "-mllvm", "-amdgpu-function-calls=false"]
    standard = [f for f in keyed if f.startswith("-std=")][-1]
    rest = [f for f in keyed if not f.startswith(("-O", "-std="))]
    rest = [f for i, f in enumerate(rest) if f not in rest[i + 1:]]  # one of each, in the order they last appear
    return [standard, level, *rest], file_only, ignored  # canonical, so equal settings share one PCH


def base_command(chain: hip_toolchain.Toolchain, target: str, lite: bool) -> list[str]:
    return [str(chain.clang), "-x", "hip", f"--offload-arch={target}", "--cuda-device-only", "--no-gpu-bundle-output",
            f"--rocm-path={chain.rocm}", *chain.include_flags(lite), *torch_rocm_defines(),
            "-D__AMDGCN_WAVEFRONT_SIZE=64", "-fno-gpu-rdc", "-fno-crash-diagnostics"]


# ---------------------------------------------------------------------------
# Cached steps: the hipified translation unit and the precompiled header
# ---------------------------------------------------------------------------

def hipify(text: str, chain: hip_toolchain.Toolchain) -> str:
    """torch's hipify of load_inline's cuda.cu (as _jit_compile does), cached by content: it costs seconds."""
    key = hashlib.sha256(f"{chain.torch_version}\n{text}".encode()).hexdigest()[:24]
    cached = chain.cache / "hipified" / f"{key}.hip"
    if cached.is_file():
        return cached.read_text()
    from torch.utils.hipify import hipify_python

    with _HIPIFY_LOCK, tempfile.TemporaryDirectory() as folder:  # hipify's stdout redirect is process-wide
        source = Path(folder) / "cuda.cu"
        source.write_text(text)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            result = hipify_python.hipify(project_directory=folder, output_directory=folder, extra_files=[str(source)],
                                          show_detailed=False, show_progress=False, is_pytorch_extension=True,
                                          hipify_extra_files_only=True)
        entry = result.get(str(source))
        hipified = Path(entry.hipified_path) if entry is not None and entry.hipified_path else source
        out = hipified.read_text()
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(out)
    return out


def lite_extension(source_text: str) -> bool:
    """The lighter torch/extension.h, unless the source names the C++ frontend parts it leaves out."""
    return not re.search(r"\btorch::(nn|optim|data|serialize)\b", source_text)


@contextlib.contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # one builder per PCH, also across processes
        yield


def precompiled_header(chain, target: str, keyed: list[str], lite: bool, rebuild: bool = False) -> tuple[Path, bool]:
    """(the PCH for this arch and these parsing flags, whether it was built now)."""
    # The header records the paths it was built from: another venv's torch (a CI clone's) needs its own.
    identity = json.dumps([target, keyed, lite, hip_toolchain.RECIPE, chain.torch_version, str(chain.clang),
                           str(chain.torch_include), str(chain.stubs), str(chain.newer_hip), chain.hip_version])
    name = f"{target}-{hashlib.sha256(identity.encode()).hexdigest()[:16]}"
    folder = chain.cache / "pch"
    pch = folder / f"{name}.pch"
    with _locked(folder / f"{name}.lock"):
        if pch.is_file() and not rebuild:
            os.utime(pch)  # marks it recently used
            return pch, False
        header = folder / f"{name}.h"
        header.write_text("#include <torch/types.h>\n#include <hip/hip_runtime.h>\n#include <torch/extension.h>\n")
        command = base_command(chain, target, lite) + keyed + [
            "-fpch-instantiate-templates", "-S", "-Xclang", "-emit-pch", str(header), "-o", str(pch) + ".tmp"]
        result = run(command)
        if result.returncode != 0:
            raise RuntimeError(f"building the precompiled header failed: {first_error(result.stderr)}")
        os.replace(str(pch) + ".tmp", pch)
        (folder / f"{name}.json").write_text(identity + "\n")
    old = sorted(folder.glob("*.pch"), key=lambda p: p.stat().st_mtime, reverse=True)[MAX_PCH_FILES:]
    for stale in old:
        stale.unlink(missing_ok=True)
    return pch, True


def first_error(stderr: str) -> str:
    match = next((m for m in DIAGNOSTIC.finditer(stderr) if "error" in m.group("kind")), None)
    if match:
        return f"{match.group('file')}:{match.group('line')}: {match.group('message')}"
    return (stderr.strip().splitlines() or ["(no output)"])[-1][:300]


def run(command: list[str]) -> subprocess.CompletedProcess:
    """clang, with a time limit whose expiry reads as a compile error rather than an exception."""
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, 124, "", "error: clang took more than 900 s; stopped\n")
