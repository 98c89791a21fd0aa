"""Ahead-of-time compiles of a submission, whatever its kernels are written in: Triton (harness/compile/aot.py, for
gfx950 / gfx942 / sm90) and HIP load_inline sources (harness/compile/hip/compile.py, gfx950 / gfx942). The CLI's
`compile` and the submit gate both ask here, so both see the same verdict."""
import ast
import dataclasses
from pathlib import Path

from harness.compile import aot
from harness.compile.hip import compile as hip_compile
from harness.compile.hip import source as hip_source
from harness.results import records
from harness.submission import needs_of


class CompileError(ValueError):
    """The compile cannot be attempted here (message is one line for the user)."""


class ToolchainMissing(CompileError):
    """The HIP toolchain is not set up on this machine (the message says how to get it)."""


@dataclasses.dataclass
class Compiled:
    triton: list  # aot.KernelReport per kernel variant
    hip: hip_compile.HipCompileReport | None  # None when the file builds no HIP
    syntax_error: tuple[int, str] | None = None  # (line, message) when the Python file does not parse
    problems: list = dataclasses.field(default_factory=list)  # what importing it did on disk (the sandbox's finds)

    @property
    def failed(self) -> bool:
        """A kernel did not compile, the file did not parse, or its import tampered (a skipped variant is not a
        failure)."""
        return (bool(self.syntax_error) or bool(self.problems) or any(r.error and not r.skipped for r in self.triton)
                or bool(self.hip and self.hip.blocking))

    @property
    def nothing_compiled(self) -> bool:
        """No kernel was built: no Triton variant compiled and no HIP source (nothing compiled is not a pass)."""
        return self.hip is None and not any(not r.skipped and not r.error for r in self.triton)

    @property
    def status(self) -> str:
        return "fail" if self.failed else ("skip" if self.nothing_compiled else "pass")

    def syntax_error_line(self, name: str) -> str:
        """'FILE:LINE: SyntaxError: message', as a compiler names the line that stopped it."""
        return "{}:{}: SyntaxError: {}".format(name, *self.syntax_error)


NOTHING_TO_COMPILE = "nothing compiled: no @triton.jit kernel variant was built and there is no HIP load_inline source"


def record(submission, target: str, outcome: Compiled, versions: dict, started: str, finished: str,
           protection: str | None = None) -> dict:
    """A ledger record of the compile (mode "compile"): the scoreboard's "where verified" reads it."""
    failed = [r for r in outcome.triton if r.error and not r.skipped]
    built = [r for r in outcome.triton if not r.error and not r.skipped]
    reason = outcome.hip.summary if outcome.hip is not None else (
        f"{failed[0].kernel}: {failed[0].error}" if failed else f"{len(built)} Triton kernel variant(s)")
    if outcome.nothing_compiled and not failed:
        reason = NOTHING_TO_COMPILE
    if outcome.problems:
        reason = outcome.problems[0]
    if outcome.syntax_error:
        reason = "SyntaxError at line {}: {}".format(*outcome.syntax_error)
    return records.new_record(
        source="local", submission=records.submission_info(submission),
        mode="compile", cases="-", flush="none",
        device=records.Device(name=f"{target} (compiled here, not run)", arch=target, backend="compile"),
        versions=versions, status=outcome.status, reason=reason, results=[], warnings=list(outcome.problems[1:]),
        started=started, finished=finished, protection=protection)


def compile_submission(path: Path, target: str, triton_reports) -> Compiled:
    """Compile every kernel of the file for `target`; CompileError when this machine cannot try.
    `triton_reports()` compiles its Triton kernels where importing the file is safe (harness/run/compiling.py)."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    try:
        ast.parse(text, filename=str(path))
    except SyntaxError as error:  # the user's file: a failed compile at its line, like a kernel that does not build
        return Compiled(triton=[], hip=None, syntax_error=(error.lineno or 1, error.msg))
    builds_hip = bool(hip_source.find_builds(text))
    hip = None
    if builds_hip:
        if target not in hip_compile.TARGETS:
            raise CompileError(f"{Path(path).name} builds HIP sources: compile it for {' or '.join(hip_compile.TARGETS)}")
        hip = hip_compile.compile_file(path, target)
        if hip.verdict == "toolchain_missing":
            raise ToolchainMissing(hip.summary)
    if builds_hip and "triton" not in {need.name for need in needs_of(text)}:
        return Compiled(triton=[], hip=hip)  # importing it would only start a HIP build that cannot run here
    if target not in aot.TARGETS:
        raise CompileError(f"unknown target {target!r}: use one of {', '.join(aot.TARGETS)}")
    if "triton" not in {need.name for need in needs_of(text)}:
        return Compiled(triton=[], hip=hip)  # no Triton in the file: nothing to import it for
    return Compiled(triton=triton_reports(), hip=hip)
