"""Compile a submission's load_inline HIP sources for gfx950 / gfx942 on any machine, and report on the kernels.

The translation unit is rebuilt as torch's load_inline writes it (its CUDA prefix, hipified by torch's own
hipify, `#line` directives into the .py file) and compiled device-only by upstream clang-22 with the HIP 6.2
headers of hip_toolchain, with the flags load_inline hands hipcc on ROCm plus the file's own. The compiler's
resource remarks give VGPR / AGPR / SGPR / scratch / spills / LDS / occupancy per kernel; llvm-objdump the
MFMA instructions and the wait states after them. The torch headers go through a precompiled header built on
first use per (arch, parsing flags) into the cache, so a second compile takes a few seconds.
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import fcntl
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from harness import hip_hazards, hip_source, hip_toolchain
from harness.aot import KernelReport
from harness.lint import Finding

TARGETS = ("gfx950", "gfx942")
LDS_LIMIT = 163840  # bytes per workgroup on gfx950; clang refuses more
NOTE = ("upstream LLVM 22 with HIP 6.2 headers (triton 3.5.1 wheel) and this machine's torch headers, "
        "not the runner's ROCm compiler: the figures are indicative")
# Flags that may differ between the PCH and the file using it (checked with clang 22); all others key the PCH.
_TU_ONLY = re.compile(r"^(-ffp-contract=|-fgpu-flush-denormals-to-zero|-fno-gpu-flush-denormals-to-zero|"
                      r"-munsafe-fp-atomics|-mno-unsafe-fp-atomics|-W|-w$|-Rpass)")
_KEPT = re.compile(r"^(-O|-std=|-D|-U|-f|-m|-W|-w$)")
_DROPPED_EXACT = {"-fgpu-rdc", "-fno-gpu-rdc", "-c", "-v", "-save-temps", "--save-temps"}
# clang's words for a precompiled header it will not use; the compile is then retried without one.
_PCH_TROUBLE = re.compile(r"precompiled (file|header)|PCH file|AST file", re.IGNORECASE)
_DIAGNOSTIC = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<kind>fatal error|error|warning): "
                         r"(?P<message>.*)$", re.MULTILINE)
_REMARK = re.compile(r"^[^\n]*?:(\d+):\d+: remark:\s+([^:\n]+?):\s+(\S+) \[-Rpass-analysis=kernel-resource-usage\]",
                     re.MULTILINE)
_LDS_OVERFLOW = re.compile(r"local memory \((\d+)\) exceeds limit \((\d+)\)(?: in function '([^']+)')?")
_HIPIFY_LOCK = threading.Lock()
MAX_PCH_FILES = 6  # ~150 MB each; the least recently used go first


@dataclasses.dataclass
class HipKernelReport(KernelReport):
    build: str = ""  # the load_inline name
    line: int | None = None  # the kernel's line in the .py file
    mfma_count: int = 0
    min_mfma_wait: int | None = None  # fewest wait states between an MFMA and the first VALU read of its result


@dataclasses.dataclass
class HipCompileReport:
    path: str
    target: str
    verdict: str  # ok | compile_error | lds_overflow | spills | hazard | unsupported | no_hip | toolchain_missing
    summary: str  # one line
    kernels: list[HipKernelReport] = dataclasses.field(default_factory=list)
    findings: list[Finding] = dataclasses.field(default_factory=list)  # hazards and unreadable sources
    error_line: int | None = None  # the .py line of the first compile error
    diagnostics: str = ""  # the compiler's errors and warnings, trimmed
    notes: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    pch: str = ""  # "hit", "built", "none"

    @property
    def blocking(self) -> bool:
        """A compile error (an LDS overflow is one): the runner's build would fail too."""
        return self.verdict in ("compile_error", "lds_overflow")


# ---------------------------------------------------------------------------
# Flags
# ---------------------------------------------------------------------------

def torch_rocm_defines() -> list[str]:
    """The -D flags torch's cpp_extension gives hipcc on ROCm, read from its source (importing torch is slow)."""
    torch = hip_toolchain.torch_dir()
    tree = ast.parse((torch / "utils" / "cpp_extension.py").read_text())
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


def _lite(source_text: str) -> bool:
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
    identity = json.dumps([target, keyed, lite, hip_toolchain.RECIPE, chain.torch_version, str(chain.clang)])
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
        result = subprocess.run(command, capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            raise RuntimeError(f"building the precompiled header failed: {_first_error(result.stderr)}")
        os.replace(str(pch) + ".tmp", pch)
        (folder / f"{name}.json").write_text(identity + "\n")
    old = sorted(folder.glob("*.pch"), key=lambda p: p.stat().st_mtime, reverse=True)[MAX_PCH_FILES:]
    for stale in old:
        stale.unlink(missing_ok=True)
    return pch, True


def _first_error(stderr: str) -> str:
    match = _DIAGNOSTIC.search(stderr)
    errors = [m for m in _DIAGNOSTIC.finditer(stderr) if "error" in m.group("kind")]
    match = errors[0] if errors else match
    if match:
        return f"{match.group('file')}:{match.group('line')}: {match.group('message')}"
    return (stderr.strip().splitlines() or ["(no output)"])[-1][:300]


# ---------------------------------------------------------------------------
# Reading the compiler's output
# ---------------------------------------------------------------------------

def _demangle(chain, names: list[str]) -> dict[str, str]:
    """mangled -> short demangled name (parameters dropped)."""
    if not names or chain.cxxfilt is None:
        return {n: n for n in names}
    out = subprocess.run([str(chain.cxxfilt)], input="\n".join(names), capture_output=True, text=True).stdout
    return {n: d.split("(")[0].removeprefix("void ") for n, d in zip(names, out.splitlines())}


def _kernels(stderr: str, build: str, target: str) -> list[HipKernelReport]:
    """One report per "Function Name" block of the kernel-resource-usage remarks."""
    kernels, fields = [], {}

    def flush():
        if fields:
            waves = fields.get("Occupancy [waves/SIMD]")
            kernels.append(HipKernelReport(
                kernel=fields["Function Name"], label=build, target=target, build=build, line=fields["line"],
                registers=int(fields.get("VGPRs", 0)), agprs=int(fields.get("AGPRs", 0)),
                sgprs=int(fields.get("TotalSGPRs", 0)),
                spills=int(fields.get("VGPRs Spill", 0)) + int(fields.get("SGPRs Spill", 0)),
                stack_bytes=int(fields.get("ScratchSize [bytes/lane]", 0)),
                shared_bytes=int(fields.get("LDS Size [bytes/block]", 0)),
                occupancy=f"{waves} waves/SIMD" if waves else None))

    for line, key, value in _REMARK.findall(stderr):
        if key == "Function Name":
            flush()
            fields = {"line": int(line)}
        fields[key] = value
    flush()
    return kernels


def _disassembly(chain, hsaco: Path, kernels: list[HipKernelReport]) -> None:
    """MFMA names and counts, and the fewest wait states before a VALU reads an MFMA result, per kernel."""
    text = subprocess.run([str(chain.objdump), "-d", "--no-show-raw-insn", str(hsaco)], capture_output=True,
                          text=True, timeout=300).stdout
    code = hip_hazards.functions(text)
    for kernel in kernels:
        instructions = code.get(kernel.kernel, [])
        mfmas = [i.split(None, 1)[0] for i in instructions if hip_hazards.is_mfma(i)]
        kernel.mfma_count = len(mfmas)
        kernel.matrix_instructions = tuple(sorted(set(mfmas)))
        read = [w.wait_states for w in hip_hazards.mfma_waits(instructions) if w.reader]
        kernel.min_mfma_wait = min(read) if read else None


# ---------------------------------------------------------------------------
# Compiling
# ---------------------------------------------------------------------------

def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def compile_build(build: hip_source.InlineBuild, display: str, target: str, chain, report: HipCompileReport,
                  use_pch: bool = True) -> None:
    """Compile one load_inline call; kernels, errors and notes go into `report`."""
    source = hipify(build.translation_unit(), chain).replace(
        f'"{hip_source.LINE_FILE_PLACEHOLDER}"', json.dumps(display))
    lite = _lite(source)
    keyed, file_only, ignored = split_flags(build.cuda_flags)
    if ignored:
        report.notes.append(f"{build.name}: flags not used for this compile: {' '.join(ignored)}")
    if not lite:
        report.notes.append(f"{build.name}: uses the full torch/extension.h (it names torch::nn/optim/data)")
    with tempfile.TemporaryDirectory() as folder:
        unit, hsaco = Path(folder) / f"{build.name}.hip", Path(folder) / f"{build.name}.hsaco"
        unit.write_text(source)
        command = base_command(chain, target, lite) + keyed + file_only + [
            f"-DTORCH_EXTENSION_NAME={build.name}", "-Rpass-analysis=kernel-resource-usage", "-c", str(unit),
            "-o", str(hsaco)]
        result, report.pch = None, "none"
        for attempt in (("pch", False), ("pch", True), ("plain", False)) if use_pch else (("plain", False),):
            extra = []
            if attempt[0] == "pch":
                pch, built = precompiled_header(chain, target, keyed, lite, rebuild=attempt[1])
                extra, report.pch = ["-Xclang", "-include-pch", "-Xclang", str(pch)], "built" if built else "hit"
            result = subprocess.run(command[:1] + extra + command[1:], capture_output=True, text=True, timeout=900)
            if result.returncode == 0 or not _PCH_TROUBLE.search(result.stderr):
                break
            report.pch = "none"
        kernels = _kernels(result.stderr, build.name, target)
        names = _demangle(chain, [k.kernel for k in kernels])
        if result.returncode == 0:
            _disassembly(chain, hsaco, kernels)
        for kernel in kernels:
            kernel.label = f"{names[kernel.kernel]} (line {kernel.line})"
            kernel.kernel = names[kernel.kernel]
        report.kernels += kernels
    report.diagnostics += result.stderr.strip()[:8000] + ("\n" if result.stderr.strip() else "")
    if result.returncode == 0:
        return
    overflow = _LDS_OVERFLOW.search(result.stderr)
    errors = [d for d in _DIAGNOSTIC.finditer(result.stderr) if "error" in d.group("kind")]
    first = errors[0] if errors else None
    if first and first.group("file") == display and report.error_line is None:
        report.error_line = int(first.group("line"))
    if report.verdict not in ("compile_error", "lds_overflow"):
        report.verdict = "lds_overflow" if overflow else "compile_error"
        report.summary = (f"LDS {overflow.group(1)} bytes exceeds the {overflow.group(2)}-byte limit"
                          if overflow else f"compile error: {_first_error(result.stderr)}")


def compile_file(path: str | Path, target: str = "gfx950", use_pch: bool = True) -> HipCompileReport:
    """Compile every load_inline HIP source of a submission for target; never raises for the file's own faults."""
    started = time.monotonic()
    path = Path(path)
    display = _display(path)
    report = HipCompileReport(path=display, target=target, verdict="ok", summary="")
    if target not in TARGETS:
        raise ValueError(f"unknown HIP target {target!r}: use one of {', '.join(TARGETS)}")
    text = path.read_text()
    report.findings = hip_hazards.inline_asm_mfma(text)
    try:
        builds = hip_source.find_builds(text)
    except SyntaxError as error:
        report.verdict, report.error_line = "compile_error", error.lineno
        report.summary = f"the Python file does not parse: {error.msg}"
        return report
    if not builds:
        report.verdict, report.summary = "no_hip", "no load_inline call: nothing to compile"
        return report
    try:
        chain = hip_toolchain.find()
    except hip_toolchain.ToolchainMissing as error:
        report.verdict, report.summary = "toolchain_missing", str(error)
        return report
    report.notes.append(NOTE)
    for build in builds:
        for line, why in build.problems:
            report.findings.append(Finding("HIP_SOURCE_UNREADABLE", line, f"{build.name}: {why}", False))
        if not build.cuda_sources:
            if report.verdict == "ok":
                report.verdict = "unsupported"
                report.summary = f"{build.name}: no cuda_sources readable from the file's text"
            continue
        compile_build(build, display, target, chain, report, use_pch)
    _verdict(report)
    report.seconds = time.monotonic() - started
    return report


def _verdict(report: HipCompileReport) -> None:
    """Worst first: compile error / LDS overflow, unreadable source, spills, inline-asm MFMA hazard, ok."""
    if report.verdict != "ok":
        return
    spilling = [k for k in report.kernels if k.spills]
    if spilling:
        report.verdict = "spills"
        report.summary = "; ".join(f"{k.kernel} spills {k.spills} registers" for k in spilling)
    elif any(f.rule == hip_hazards.RULE for f in report.findings):
        report.verdict = "hazard"
        report.summary = f"compiles; MFMA issued through inline asm (line " \
            f"{next(f.line for f in report.findings if f.rule == hip_hazards.RULE)}): no hazard wait states"
    else:
        report.summary = f"compiles for {report.target}: {len(report.kernels)} kernel(s), no spills"


def main(argv: list[str]) -> int:
    """python -m harness.hip_compile FILE [gfx950|gfx942]: a plain-text report (the CLI prints a table)."""
    report = compile_file(argv[0], argv[1] if len(argv) > 1 else "gfx950")
    print(f"{report.path} for {report.target}: {report.verdict}: {report.summary}  ({report.seconds:.1f} s, "
          f"pch {report.pch or 'none'})")
    for k in report.kernels:
        print(f"  {k.label}: VGPR {k.registers} AGPR {k.agprs} SGPR {k.sgprs} scratch {k.stack_bytes} "
              f"spills {k.spills} LDS {k.shared_bytes} {k.occupancy} MFMA {k.mfma_count} "
              f"{','.join(k.matrix_instructions)} min-wait {k.min_mfma_wait}")
    for finding in report.findings:
        print("  " + finding.format(report.path))
    if report.verdict in ("compile_error", "lds_overflow"):
        print(report.diagnostics[:3000])
    for note in report.notes:
        print(f"  note: {note}")
    return 1 if report.blocking or report.verdict == "toolchain_missing" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
