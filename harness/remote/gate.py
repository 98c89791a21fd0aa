"""The local gate `make submit` runs before spending a ranked run: lint, the header, then whatever this
machine can check: a local test run wherever `harness run` can run the file (on a CPU, HIP on the gfx950
emulator, after a gfx950 compile that refuses a compile error in seconds), else a gfx950 compile of its
Triton kernels and HIP sources, which refuses the send on a compile error.
"""
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import paths
from harness.compile import compiled
from harness.checks.directives import header_leaderboard
from harness.checks.lint import lint_file
from harness.platform import can_run, detect, emulates, run_platform
from harness.run import compiling
from harness.results.records import EMULATOR_MARK
from harness.sandbox import guard

GATE_RUN_TIMEOUT_S = 1800


@dataclasses.dataclass
class GateCheck:
    name: str
    ok: bool | None  # None: skipped (not applicable here, or pointless after an earlier failure)
    details: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class GateVerdict:
    checks: list[GateCheck]

    @property
    def ok(self) -> bool:
        return all(check.ok is not False for check in self.checks)



def _lint_check(path: Path) -> GateCheck:
    findings = lint_file(path)
    blocking = [f for f in findings if f.blocking]
    lines = [f"{path.name}:{f.line}: {f.rule} {f.message}" for f in (blocking or findings)]
    return GateCheck("lint", not blocking, lines or ["clean"])


def _header_check(text: str, leaderboard: str) -> GateCheck:
    in_header = header_leaderboard(text)
    if in_header is not None and in_header != leaderboard:
        return GateCheck("header", False, [f"the file's header names leaderboard {in_header!r} but {leaderboard!r} "
                                           "was asked for; the server refuses a mismatch"])
    return GateCheck("header", True, [f"leaderboard {in_header or leaderboard}"])


def _tail(text: str, lines: int = 8) -> list[str]:
    return [line for line in text.strip().splitlines()[-lines:] if line.strip()]


def harness_run_test(path: Path) -> subprocess.CompletedProcess:
    """`harness run PATH --mode test --json` in a child process: the one path a run takes, as the user would
    type it. Its record goes to a throwaway ledger: the gate checks, it does not add to the user's ledger."""
    command = [sys.executable, "-c", "from harness.cli import main; main()", "run", str(path), "--mode", "test",
               "--json"]
    with tempfile.TemporaryDirectory(prefix="harness-gate-") as scratch:
        env = {**os.environ, paths.LEDGER_ENV: str(Path(scratch) / "gate-ledger.jsonl")}
        return subprocess.run(command, capture_output=True, text=True, timeout=GATE_RUN_TIMEOUT_S,
                              cwd=paths.REPO_ROOT, env=env)


def _run_record(stdout: str) -> dict | None:
    """The child's one record, or None when it printed none (it failed before running anything)."""
    try:
        found = json.loads(stdout)
    except ValueError:
        return None
    return found[0] if isinstance(found, list) and len(found) == 1 and isinstance(found[0], dict) else None


def _local_run_check(path: Path) -> GateCheck:
    """The local test run's verdict, naming where it ran (the emulator's runs say "correctness only")."""
    asked = f"`harness run {path.name} --mode test`"
    try:
        done = harness_run_test(path)
    except subprocess.TimeoutExpired:
        return GateCheck("local test run", False, [f"{asked} took over {GATE_RUN_TIMEOUT_S} s"])
    record = _run_record(done.stdout)
    where = f" on {record['device']['name']}, {record['cases']} cases" if record else ""
    if record and record["status"] == "skip":
        return GateCheck("local test run", None, [f"{asked} skipped it here: {record['reason']}"])
    if done.returncode == 0:
        return GateCheck("local test run", True, [f"{asked} passed here{where}"])
    said = f": {record['status']}: {record['reason']}" if record else ""
    return GateCheck("local test run", False,
                     [f"{asked} failed here{where} (exit {done.returncode}){said}"] + _tail(done.stderr))


def _compile_check(submission) -> GateCheck:
    """Its kernels compiled for gfx950 (Triton and HIP alike), where this machine cannot run the file; its import
    happens in its sandboxed worker, as in `harness compile`."""
    path = submission.path
    try:
        outcome = compiling.compile_guarded(submission, "gfx950", detect("auto"), guard.choose("auto"))
    except compiled.ToolchainMissing as missing:
        return GateCheck("gfx950 compile", None, [f"not compiled: {missing}"])
    except Exception as error:  # noqa: BLE001 - any compiler failure is the gate's verdict, in one line
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return GateCheck("gfx950 compile", False, [f"its kernels do not compile for gfx950: {first}"])
    details = [outcome.syntax_error_line(path.name)] if outcome.syntax_error else []
    details += outcome.problems
    if outcome.hip is not None:
        details.append(f"HIP: {outcome.hip.verdict}: {outcome.hip.summary} (compiled with upstream LLVM 22, not run)")
        details += [f.format(path.name) for f in outcome.hip.findings]
    if outcome.triton:
        broken = [r for r in outcome.triton if r.error and not r.skipped]
        details.append(f"Triton: {len(outcome.triton) - len(broken)} of {len(outcome.triton)} kernel variant(s) "
                       "compiled for gfx950" + (f"; {broken[0].kernel}: {broken[0].error}" if broken else ""))
    if outcome.nothing_compiled and not outcome.failed:
        return GateCheck("gfx950 compile", None, details + [compiled.NOTHING_TO_COMPILE])
    return GateCheck("gfx950 compile", not outcome.failed, details)


def run_gate(submission, text: str, leaderboard: str, here=None, on_step=None) -> GateVerdict:
    """lint + header, then a local test run wherever `harness run` can run the file (on this machine's
    run_platform: HIP on the gfx950 emulator where there is no GPU), else a gfx950 compile. on_step(line)
    hears of the slow steps before they start."""
    here = here or run_platform("auto")
    say = on_step or (lambda line: None)
    checks = [_lint_check(submission.path), _header_check(text, leaderboard)]
    runnable, why_not = can_run(submission, here)
    kernels = {"triton", "hip"} & (submission.requirements | submission.optional)
    if not checks[0].ok:  # the server would refuse it anyway: spare the slow part
        checks.append(GateCheck("local test run", None, ["not run: lint already refused the file"]))
    elif runnable and emulates(submission, here):  # a compile error refuses in seconds, not after a build
        say(f"compiling {submission.path.name}'s kernels for gfx950")
        checks.append(_compile_check(submission))
        if checks[-1].ok is False:
            checks.append(GateCheck("local test run", None, ["not run: the gfx950 compile already refused it"]))
        else:
            say(f"running {submission.path.name}'s test cases here ({EMULATOR_MARK}; a HIP build and the "
                "emulator take minutes)")
            checks.append(_local_run_check(submission.path))
    elif runnable:
        say(f"running {submission.path.name}'s test cases here")
        checks.append(_local_run_check(submission.path))
    elif kernels:
        say(f"compiling {submission.path.name}'s kernels for gfx950")
        checks.append(_compile_check(submission))
        checks.append(GateCheck("local test run", None, [f"not run here: {why_not}"]))
    else:
        checks.append(GateCheck("local test run", None, [f"not run here: {why_not}; static checks only"]))
    return GateVerdict(checks)
