"""Compile a submission's load_inline HIP sources for gfx950 / gfx942 on any machine, and report on the kernels.

The translation unit is rebuilt as torch's load_inline writes it (its CUDA prefix, hipified by torch's own
hipify, `#line` directives into the .py file) and compiled device-only by upstream clang-22 with the HIP 6.2
headers of hip_toolchain, with the flags load_inline hands hipcc on ROCm plus the file's own. The compiler's
resource remarks give VGPR / AGPR / SGPR / scratch / spills / LDS / occupancy per kernel; llvm-objdump the
MFMA instructions and the wait states after them. The torch headers go through a precompiled header built on
first use per (arch, parsing flags) into the cache, so a second compile takes a few seconds.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.compile import loops
from harness.compile.hip import build as hip_build
from harness.checks import hip_hazards
from harness.compile.hip import source as hip_source
from harness.compile.hip import toolchain as hip_toolchain
from harness.compile.aot import KernelReport
from harness.checks.findings import Finding

TARGETS = ("gfx950", "gfx942")
NOTE = ("upstream LLVM 22 with {headers} (the runner has ROCm 7.1) and this machine's torch headers, not the "
        "runner's ROCm compiler: the figures are indicative")
_REMARK = re.compile(r"^[^\n]*?:(\d+):\d+: remark:\s+([^:\n]+?):\s+(\S+) \[-Rpass-analysis=kernel-resource-usage\]",
                     re.MULTILINE)
_LDS_OVERFLOW = re.compile(r"local memory \((\d+)\) exceeds limit \((\d+)\)")  # 163840 bytes on gfx950


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
# Reading the compiler's output
# ---------------------------------------------------------------------------

def _without_remarks(stderr: str) -> str:
    """The compiler's errors and warnings, without the resource-usage remarks and their source excerpts."""
    kept, keep = [], True
    for line in stderr.splitlines():
        if re.match(r"^\S.*?: (remark|error|fatal error|warning|note): ", line):
            keep = ": remark: " not in line
        if keep:
            kept.append(line)
    return "\n".join(kept).strip()


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
    listings = loops.from_objdump(text)  # one parse serves the loop figures and the hazard check
    for kernel in kernels:
        listing = listings.get(kernel.kernel)
        kernel.loop = loops.main_loop(listing) if listing is not None else None
        instructions = list(listing.instructions) if listing is not None else []
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
    source = hip_build.hipify(build.translation_unit(), chain).replace(
        f'"{hip_source.LINE_FILE_PLACEHOLDER}"', json.dumps(display))
    lite = hip_build.lite_extension(source)
    keyed, file_only, ignored = hip_build.split_flags(build.cuda_flags)
    if ignored:
        report.notes.append(f"{build.name}: flags not used for this compile: {' '.join(ignored)}")
    if not lite:
        report.notes.append(f"{build.name}: uses the full torch/extension.h (it names torch::nn/optim/data)")
    with tempfile.TemporaryDirectory() as folder:
        unit, hsaco = Path(folder) / f"{build.name}.hip", Path(folder) / f"{build.name}.hsaco"
        unit.write_text(source)
        command = hip_build.base_command(chain, target, lite) + keyed + file_only + [
            f"-DTORCH_EXTENSION_NAME={build.name}", "-Rpass-analysis=kernel-resource-usage", "-c", str(unit),
            "-o", str(hsaco)]
        result, report.pch = None, "none"
        for rebuild in (False, True) if use_pch else ():  # a stale PCH is rebuilt once, then none is used
            try:
                pch, built = hip_build.precompiled_header(chain, target, keyed, lite, rebuild=rebuild)
            except RuntimeError as error:  # e.g. a flag clang rejects: the plain compile reports it
                report.notes.append(str(error))
                break
            result = hip_build.run(command[:1] + ["-Xclang", "-include-pch", "-Xclang", str(pch)] + command[1:])
            report.pch = "built" if built else "hit"
            if result.returncode == 0 or not hip_build.PCH_TROUBLE.search(result.stderr):
                break
            result, report.pch = None, "none"
        if result is None:
            result = hip_build.run(command)
        kernels = _kernels(result.stderr, build.name, target)
        names = _demangle(chain, [k.kernel for k in kernels])
        if result.returncode == 0:
            _disassembly(chain, hsaco, kernels)
        for kernel in kernels:
            kernel.label = f"{names[kernel.kernel]} (line {kernel.line})"
            kernel.kernel = names[kernel.kernel]
        report.kernels += kernels
    diagnostics = _without_remarks(result.stderr)
    report.diagnostics += diagnostics[:8000] + ("\n" if diagnostics else "")
    if result.returncode == 0:
        return
    overflow = _LDS_OVERFLOW.search(result.stderr)
    errors = [d for d in hip_build.DIAGNOSTIC.finditer(result.stderr) if "error" in d.group("kind")]
    first = errors[0] if errors else None
    if first and first.group("file") == display and report.error_line is None:
        report.error_line = int(first.group("line"))
    if report.verdict not in ("compile_error", "lds_overflow"):
        report.verdict = "lds_overflow" if overflow else "compile_error"
        report.summary = (f"LDS {overflow.group(1)} bytes exceeds the {overflow.group(2)}-byte limit"
                          if overflow else f"compile error: {hip_build.first_error(result.stderr)}")


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
    report.notes.append(NOTE.format(headers=chain.headers_note()))
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
    """python -m harness.compile.hip.compile FILE [gfx950|gfx942]: a plain-text report (the CLI prints a table)."""
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
