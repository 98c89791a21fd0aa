"""Remote submission: send a submission to the real MI355X leaderboard through popcorn-cli.

Read top to bottom:
  1. settings (leaderboard, deadline, rate limits, where raw reports go);
  2. `#!POPCORN` directives, read the way popcorn-cli reads them;
  3. report -> ledger records (one per run and stage, public and secret runs apart); the report
     itself is parsed by harness/popcorn_report.py, for both popcorn-cli generations;
  4. the server's error messages -> one clear line each;
  5. the rate-limit memory (results/remote/sent.jsonl);
  6. the local gate (lint, then a local test run or an ahead-of-time Triton compile);
  7. the flow: `plan()` decides what would be sent, `send()` runs popcorn-cli and records the outcome.
Nothing here prints: harness/cli.py shows what these functions return.

Ledger records written here (shape in harness/ledger.py) carry source "remote", device
REMOTE_DEVICE and a `remote` dict:
  {"run": "public" | "secret" | null (no report came back), "stage": "test" | "benchmark" |
   "leaderboard" | null, "submitted_mode": mode sent, "leaderboard": ..., "gpu": ...,
   "report_dir": "results/remote/<...>", "generation": "text" | "json" | null,
   "verdict": "<the server's verdict line>", "workflow_url": ..., "system": {...},
   "rounding": "<how the printed numbers were rounded>",
   "score": seconds | null, "score_approximate": true | false, "error_kind": ... (failed attempts)}
A report's stages become records with `mode` = the stage: a leaderboard-mode submission gives a
"test", a "benchmark" and a "leaderboard" record for the public run and the same for the secret run.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

from harness import __version__
from harness import ledger
from harness.aot import compile_submission
from harness.lint import lint_file
from harness.popcorn_report import Report, ReportFormatError, ShapeResult, Stage, parse_report

# ---------------------------------------------------------------------------------------------
# 1. Settings
# ---------------------------------------------------------------------------------------------
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LEADERBOARD = "amd-mixed-mla"
DEFAULT_GPU = "MI355X"
MODES = ("test", "benchmark", "leaderboard")
# kernelbot's submission.check_deadline refuses every mode after this (problems/amd_202602.yaml).
DEADLINE = datetime(2026, 4, 7, 7, 59, tzinfo=timezone.utc)
# Per rolling hour, per leaderboard and mode category (observed values, POPCORN_FACTS section 4).
DEFAULT_RATE_LIMITS = {"leaderboard": 1, "test": 6}
RATE_LIMIT_ENV = {"leaderboard": "HARNESS_RATE_LIMIT_LEADERBOARD", "test": "HARNESS_RATE_LIMIT_TEST"}
RATE_WINDOW = timedelta(hours=1)
REMOTE_DIR_ENV = "HARNESS_REMOTE_DIR"  # where raw reports and the sent log go (tests point it elsewhere)
# A leaderboard-mode run does tests (900 s), benchmarks (900 s) and the ranked run (1200 s), plus a queue.
DEFAULT_TIMEOUT_S = 3600
GATE_RUN_TIMEOUT_S = 1800
POPCORN_EXECUTABLES = ("popcorn-cli", "popcorn")
FIRST_JSON_SUMMARY_VERSION = (1, 3, 16)  # from here on popcorn-cli prints a JSON summary without timings
POPCORN_INSTALL_HINT = ("install it from https://github.com/gpu-mode/popcorn-cli/releases or with "
                        "`curl -fsSL https://raw.githubusercontent.com/gpu-mode/popcorn-cli/main/install.sh | bash`")
REMOTE_DEVICE = {"name": "MI355X (remote)", "arch": "gfx950", "backend": "remote"}
ROUNDING_NOTE = ("stats are popcorn's printed values converted to ns (about 3 significant digits; "
                 "each stat's printed text and last-digit resolution are in results[].notes); "
                 "runs and std are not printed")


class RemoteError(Exception):
    """A failure with a one-line message for the user; `kind` names it, `exit_code` is the CLI's."""

    def __init__(self, message: str, kind: str = "error", exit_code: int = 1):
        super().__init__(message)
        self.kind = kind
        self.exit_code = exit_code


def remote_dir() -> Path:
    return Path(os.environ.get(REMOTE_DIR_ENV) or REPO_ROOT / "results" / "remote")


def rate_limits() -> dict[str, int]:
    """The per-hour limits: defaults, overridden by $HARNESS_RATE_LIMIT_LEADERBOARD / _TEST."""
    limits = dict(DEFAULT_RATE_LIMITS)
    for category, variable in RATE_LIMIT_ENV.items():
        value = os.environ.get(variable)
        if value is None:
            continue
        if not value.strip().isdigit():
            raise RemoteError(f"${variable} must be a whole number of submissions per hour, not {value!r}",
                              "usage", 2)
        limits[category] = int(value)
    return limits


def mode_category(mode: str) -> str:
    """The server's rate-limit category: leaderboard mode apart, everything else counts as "test"."""
    return "leaderboard" if mode == "leaderboard" else "test"


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


# ---------------------------------------------------------------------------------------------
# 2. #!POPCORN directives (popcorn-cli's reading: any line at column 0 starting with # or //)
# ---------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Directives:
    leaderboard: str | None
    gpus: list[str]


def read_directives(text: str) -> Directives:
    leaderboard, gpus = None, []
    for line in text.splitlines():
        if not (line.startswith("#") or line.startswith("//")):
            continue
        tokens = line.split()
        if len(tokens) < 2 or tokens[0] not in ("#!POPCORN", "//!POPCORN"):
            continue
        key = tokens[1].lower()
        if key in ("gpu", "gpus"):
            gpus = tokens[2:]  # a later line overwrites an earlier one, as in popcorn-cli
        elif key == "leaderboard" and len(tokens) > 2:
            leaderboard = tokens[2]
    return Directives(leaderboard, gpus)


def header_leaderboard(text: str) -> str | None:
    """The leaderboard the server reads: only from the first comment block of the file."""
    for line in text.splitlines():
        if not (line.startswith("#") or line.startswith("//")):
            break
        tokens = line.split()
        if len(tokens) >= 3 and tokens[0] in ("#!POPCORN", "//!POPCORN") and tokens[1].lower() == "leaderboard":
            return tokens[2]
    return None


# ---------------------------------------------------------------------------------------------
# 3. Report -> ledger records
# ---------------------------------------------------------------------------------------------
def _stats(result: ShapeResult) -> dict | None:
    if result.mean is None:
        return None
    return {"runs": None, "mean": result.mean.ns, "std": None, "err": result.err.ns if result.err else 0.0,
            "best": result.best.ns if result.best else None, "worst": result.worst.ns if result.worst else None}


def _notes(result: ShapeResult) -> dict:
    printed = {name: value for name in ("mean", "err", "best", "worst")
               if (value := getattr(result, name)) is not None}
    if not printed:
        return {}
    return {"printed": {name: value.text for name, value in printed.items()},
            "resolution_ns": {name: value.resolution_ns for name, value in printed.items()}}


def _result_entry(result: ShapeResult) -> dict:
    return {"spec": result.spec, "status": result.status, "message": result.message,
            "stats": _stats(result), "notes": _notes(result)}


@dataclasses.dataclass
class SendContext:
    """What a record needs to know about the attempt besides the report."""
    submission: dict  # {"number", "path", "sha256"}
    mode: str
    leaderboard: str
    gpu: str
    report_dir: str
    started: str
    popcorn_version: str | None = None


def _base_record(context: SendContext, mode: str, finished: str) -> dict:
    return {"run_id": ledger.new_run_id(), "source": "remote", "submission": context.submission,
            "mode": mode, "cases": "official", "flush": "official", "device": dict(REMOTE_DEVICE),
            "versions": {"harness": __version__, "popcorn": context.popcorn_version,
                         "python": sys.version.split()[0]},
            "warnings": [], "started": context.started, "finished": finished}


def records_from_report(report: Report, context: SendContext, finished: str) -> list[dict]:
    records = []
    for run in report.runs:
        stages = run.stages or [Stage(context.mode, "", "error", run.failure or "no verdict in the report")]
        for stage in stages:
            record = _base_record(context, stage.name, finished)
            reason = stage.reason
            if not run.delivered:
                reason = f"the runner failed: {run.failure}"
            record.update({
                "status": stage.status if run.delivered else "error", "reason": reason,
                "results": [_result_entry(r) for r in stage.results],
                "remote": {"run": run.run, "stage": stage.name, "submitted_mode": context.mode,
                           "leaderboard": context.leaderboard, "gpu": context.gpu,
                           "report_dir": context.report_dir, "generation": report.generation,
                           "verdict": stage.verdict, "title": run.title, "workflow_url": run.workflow_url,
                           "system": run.system, "rounding": ROUNDING_NOTE if report.generation == "text" else
                           "no per-shape timings in this popcorn generation",
                           "score": run.score if stage.name == "leaderboard" else None,
                           "score_approximate": run.score_approximate if stage.name == "leaderboard" else False},
            })
            if run.system.get("Torch"):
                record["versions"]["torch"] = run.system["Torch"]
            records.append(record)
    return records


def error_record(context: SendContext, error: RemoteError, finished: str) -> dict:
    record = _base_record(context, context.mode, finished)
    record.update({"status": "error", "reason": str(error), "results": [],
                   "remote": {"run": None, "stage": None, "submitted_mode": context.mode,
                              "leaderboard": context.leaderboard, "gpu": context.gpu,
                              "report_dir": context.report_dir, "generation": None,
                              "error_kind": error.kind, "score": None, "score_approximate": False}})
    return record


# ---------------------------------------------------------------------------------------------
# 4. The server's and popcorn-cli's error messages -> one line each
# ---------------------------------------------------------------------------------------------
_RATE_RE = re.compile(r"Rate limit exceeded: (?P<count>\d+)/(?P<max>\d+) (?P<category>\w+) submissions per hour\. "
                      r"Try again in (?P<seconds>\d+)s")
_SERVER_STATUS_RE = re.compile(r"Server returned status (?P<code>\d+)[^:]*: (?P<detail>.*)")
_NETWORK_HINTS = ("error sending request", "connection refused", "dns error", "error trying to connect",
                  "tcp connect", "connection reset", "network is unreachable", "failed to lookup address",
                  "operation timed out", "certificate")


def classify_failure(stderr: str, returncode: int) -> RemoteError:
    """popcorn-cli exited non-zero: turn its `Application error: ...` into one clear line."""
    app = re.findall(r"Application error: (.*)", stderr)
    detail = app[-1].strip() if app else next((line.strip() for line in reversed(stderr.splitlines())
                                               if line.strip()), f"popcorn-cli exited with code {returncode}")
    whole = stderr if app else detail
    lowered = whole.lower()
    if match := _RATE_RE.search(whole):
        minutes = int(match["seconds"]) / 60
        return RemoteError(f"the server's rate limit: {match['count']}/{match['max']} {match['category']} "
                           f"submissions per hour; try again in {minutes:.0f} min ({match['seconds']} s)",
                           "rate_limit")
    if "deadline to submit" in lowered and "has passed" in lowered:
        match = re.search(r"It was (.+?) and today is", whole)
        when = f" ({match[1].strip()})" if match else ""
        return RemoteError(f"the server refused: the leaderboard's deadline{when} has passed", "deadline")
    if "work on another" in lowered:
        return RemoteError("the server rejected the file: the word it forbids (s-t-r-e-a-m, any case, comments "
                           "included) appears in it", "rejected")
    if "too large" in lowered:
        return RemoteError("the server rejected the file: larger than its 1 MB limit", "rejected")
    if "doesn't match the one in the submission script header" in lowered:
        mismatch = whole[whole.find("Leaderboard name"):].splitlines()[0] if "Leaderboard name" in whole else detail
        return RemoteError(f"the server rejected the file: {mismatch}", "rejected")
    if "kernelguard pre-check is unavailable" in lowered:
        return RemoteError("the server's KernelGuard pre-check is unavailable right now; try again later", "server")
    if "kernelguard" in lowered or re.search(r"Submission \d+ hacked", whole):
        rules = re.search(r"Matched rules: ([^.]+)", whole)
        return RemoteError("the server rejected the file: KernelGuard flagged it"
                           + (f" ({rules[1].strip()})" if rules else f" ({detail})"), "kernelguard")
    if match := re.search(r"Submission (\d+) timed_out: (.*)", whole):
        return RemoteError(f"submission {match[1]} timed out on the server: {match[2].strip()}", "timeout")
    if match := re.search(r"Submission (\d+) failed: (.*)", whole):
        return RemoteError(f"submission {match[1]} failed on the server: {match[2].strip()}", "server")
    if "timed out waiting for submission" in lowered:
        return RemoteError(f"popcorn-cli gave up waiting: {detail}", "timeout")
    if "config file not found" in lowered or "cli_id not found" in lowered or "register" in lowered:
        return RemoteError("popcorn-cli is not registered: run `popcorn-cli register discord` (or github) first",
                           "not_registered", 2)
    if "popcorn_api_url" in lowered:
        return RemoteError("popcorn-cli has no server address: set POPCORN_API_URL (see popcorn-cli's README)",
                           "config", 2)
    if any(hint in lowered for hint in _NETWORK_HINTS):
        return RemoteError(f"network error reaching the server: {detail}", "network")
    if match := _SERVER_STATUS_RE.search(whole):
        return RemoteError(f"server error {match['code']}: {match['detail'].strip()}", "server")
    if "server processing error" in lowered:
        return RemoteError(f"server error: {detail}", "server")
    return RemoteError(f"popcorn-cli failed: {detail}", "popcorn")


# ---------------------------------------------------------------------------------------------
# 5. Rate-limit memory: one JSON line per event in results/remote/sent.jsonl
# ---------------------------------------------------------------------------------------------
# Refusals that come before the server creates a submission do not count against its limit.
_NOT_COUNTED = {"rate_limit", "deadline", "rejected", "not_registered", "config", "network"}


def sent_log_path() -> Path:
    return remote_dir() / "sent.jsonl"


def note_sent(entry: dict) -> None:
    """Append one event (a send, or a send's outcome with the same id) to the sent log."""
    ledger.append(entry, sent_log_path())


def sent_history() -> list[dict]:
    """One entry per send: its first line, with the outcome of its last line."""
    by_id: dict[str, dict] = {}
    for event in ledger.read(sent_log_path()):
        if "id" not in event:
            continue
        by_id.setdefault(event["id"], dict(event)).update(
            {key: event[key] for key in ("outcome", "retry_at") if key in event})
    return list(by_id.values())


@dataclasses.dataclass
class RateCheck:
    ok: bool
    message: str


def check_rate_limit(leaderboard: str, mode: str, now: datetime | None = None) -> RateCheck:
    """Would one more submission of this mode exceed what we know of the server's hourly limit?"""
    now = now or utc_now()
    category = mode_category(mode)
    limit = rate_limits()[category]
    recent, retry_at = [], None
    for entry in sent_history():
        if entry.get("leaderboard") != leaderboard or entry.get("category") != category:
            continue
        if entry.get("retry_at"):
            moment = datetime.fromisoformat(entry["retry_at"])
            retry_at = max(retry_at, moment) if retry_at else moment
        sent_at = datetime.fromisoformat(entry["time"])
        if now - sent_at < RATE_WINDOW and entry.get("outcome") not in _NOT_COUNTED:
            recent.append(sent_at)
    if retry_at and retry_at > now:
        wait = (retry_at - now).total_seconds()
        return RateCheck(False, f"the server said to wait: next {category} submission allowed in "
                                f"{wait / 60:.0f} min (at {retry_at:%H:%M} UTC)")
    if len(recent) >= limit:
        wait = (min(recent) + RATE_WINDOW - now).total_seconds()
        return RateCheck(False, f"rate limit: {len(recent)}/{limit} {category} submissions sent to {leaderboard} "
                                f"in the last hour; next one in {wait / 60:.0f} min")
    return RateCheck(True, f"{len(recent)}/{limit} {category} submissions sent to {leaderboard} in the last hour")


# ---------------------------------------------------------------------------------------------
# 6. The local gate
# ---------------------------------------------------------------------------------------------
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

    @property
    def reasons(self) -> list[str]:
        return [f"{check.name}: {detail}" for check in self.checks if check.ok is False for detail in check.details]


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


def _local_run_check(path: Path) -> GateCheck:
    """`harness run PATH --mode test` in a child process: the same verdict the user would get by hand.

    Its record goes to a throwaway ledger: the gate checks, it does not add results to the user's ledger.
    """
    command = [sys.executable, "-c", "from harness.cli import main; main()", "run", str(path), "--mode", "test"]
    try:
        with tempfile.TemporaryDirectory(prefix="harness-gate-") as scratch:
            env = {**os.environ, ledger.LEDGER_ENV: str(Path(scratch) / "gate-ledger.jsonl")}
            done = subprocess.run(command, capture_output=True, text=True, timeout=GATE_RUN_TIMEOUT_S,
                                  cwd=REPO_ROOT, env=env)
    except subprocess.TimeoutExpired:
        return GateCheck("local test run", False, [f"`harness run --mode test` took over {GATE_RUN_TIMEOUT_S} s"])
    if done.returncode == 0:
        return GateCheck("local test run", True, ["`harness run --mode test` passed here"])
    return GateCheck("local test run", False,
                     [f"`harness run {path.name} --mode test` failed here (exit {done.returncode})"]
                     + _tail(done.stdout + "\n" + done.stderr))


def _aot_check(path: Path) -> GateCheck:
    try:
        reports = compile_submission(path, "gfx950")
    except Exception as error:  # noqa: BLE001 - any compiler failure is the gate's verdict, in one line
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return GateCheck("gfx950 compile", False, [f"its Triton kernels do not compile for gfx950: {first}"])
    return GateCheck("gfx950 compile", True, [f"{len(reports)} Triton kernel(s) compiled for gfx950"])


def run_gate(plan: "Plan") -> GateVerdict:
    """lint + header, then a local test run when this machine can run it, else a gfx950 compile."""
    from harness import platform

    submission = plan.submission
    checks = [_lint_check(submission.path), _header_check(plan.text, plan.leaderboard)]
    machine = platform.detect("auto")
    runnable, why_not = platform.can_run(submission, machine)
    if not checks[0].ok:  # the server would refuse it anyway: spare the slow part
        checks.append(GateCheck("local test run", None, ["not run: lint already refused the file"]))
    elif runnable:
        checks.append(_local_run_check(submission.path))
    elif "triton" in submission.requirements:
        checks.append(_aot_check(submission.path))
        checks.append(GateCheck("local test run", None, [f"not run here: {why_not}"]))
    else:
        checks.append(GateCheck("local test run", None, [f"not run here: {why_not}; static checks only"]))
    return GateVerdict(checks)


# ---------------------------------------------------------------------------------------------
# 7. The flow: plan, then send
# ---------------------------------------------------------------------------------------------
def find_popcorn() -> str | None:
    for name in POPCORN_EXECUTABLES:
        found = shutil.which(name)
        if found:
            return found
    return None


def popcorn_config_path() -> Path:
    """popcorn-cli keeps its registration in ~/.popcorn.yaml ($HOME respected, so tests can move it)."""
    return Path(os.environ.get("HOME") or Path.home()) / ".popcorn.yaml"


@dataclasses.dataclass
class Plan:
    submission: object  # harness.submission.Submission
    mode: str
    leaderboard: str
    gpu: str
    report_dir: Path
    command: list[str]
    text: str  # the file's text, as read when planning
    rate: RateCheck
    popcorn: str | None  # the executable found, or None
    popcorn_version: str | None
    warnings: list[str]
    problems: list[RemoteError]  # what stops a real send (missing tool, no registration, rate limit)

    @property
    def command_line(self) -> str:
        return shlex.join(self.command)


def _submission_dict(submission) -> dict:
    path = Path(submission.path).resolve()
    try:
        shown = str(path.relative_to(REPO_ROOT))
    except ValueError:
        shown = str(path)
    return {"number": submission.number, "path": shown, "sha256": submission.sha256}


def plan(argument: str, *, mode: str = "leaderboard", leaderboard: str | None = None, gpu: str | None = None,
         force: bool = False, now: datetime | None = None) -> Plan:
    """Everything cheap decided before sending: names, the command, rate limit, tool checks (not the gate)."""
    from harness import submission as submissions

    if mode not in MODES:
        raise RemoteError(f"unknown mode {mode!r}: choose one of {', '.join(MODES)}", "usage", 2)
    try:
        chosen = submissions.resolve(argument)
    except (FileNotFoundError, LookupError, ValueError) as error:
        raise RemoteError(str(error), "usage", 2) from None
    try:
        text = Path(chosen.path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        text = Path(chosen.path).read_bytes().decode("utf-8", "replace")  # lint reports it as non-UTF-8
    directives = read_directives(text)
    if len(directives.gpus) > 1 and gpu is None:
        raise RemoteError(f"the file names several GPUs ({' '.join(directives.gpus)}); popcorn-cli takes one: "
                          "pass --gpu", "usage", 2)
    leaderboard = leaderboard or directives.leaderboard
    gpu = gpu or (directives.gpus[0] if directives.gpus else None)
    if not leaderboard:
        raise RemoteError(f"no leaderboard: add `#!POPCORN leaderboard {DEFAULT_LEADERBOARD}` as the file's first "
                          "line or pass --leaderboard", "usage", 2)
    if not gpu:
        raise RemoteError(f"no GPU: add `#!POPCORN gpu {DEFAULT_GPU}` to the file's header or pass --gpu",
                          "usage", 2)
    now = now or utc_now()
    number = chosen.number if chosen.number is not None else chosen.slug
    report_dir = remote_dir() / f"{now:%Y%m%dT%H%M%SZ}_{number}_{mode}"
    popcorn = find_popcorn()
    command = [popcorn or "popcorn-cli", "submit", "--no-tui", "--leaderboard", leaderboard, "--gpu", gpu,
               "--mode", mode, "--output", str(report_dir / "report.txt"), str(Path(chosen.path).resolve())]
    warnings, problems = [], []
    version = _popcorn_version(popcorn) if popcorn else None
    if version and tuple(int(part) for part in version.split(".")) >= FIRST_JSON_SUMMARY_VERSION:
        warnings.append(f"popcorn-cli {version} reports only pass/fail and the score, no per-shape timings; "
                        "popcorn-cli <= v1.3.15 prints them")
    if now > DEADLINE and leaderboard == DEFAULT_LEADERBOARD:
        warnings.append(f"the {DEFAULT_LEADERBOARD} deadline ({DEADLINE:%Y-%m-%d %H:%M} UTC) has passed: the server "
                        "refuses every mode unless the leaderboard was reopened")
    if popcorn is None:
        problems.append(RemoteError(f"popcorn-cli is not installed: {POPCORN_INSTALL_HINT}", "not_installed", 2))
    elif not popcorn_config_path().is_file():
        problems.append(RemoteError(f"popcorn-cli is not registered (no {popcorn_config_path()}): run "
                                    "`popcorn-cli register discord` (or github) first", "not_registered", 2))
    rate = check_rate_limit(leaderboard, mode, now)
    if not rate.ok and force:
        warnings.append(f"{rate.message} (--force: sending anyway)")
    elif not rate.ok:
        problems.append(RemoteError(rate.message, "rate_limit"))
    return Plan(chosen, mode, leaderboard, gpu, report_dir, command, text, rate, popcorn, version, warnings,
                problems)


@dataclasses.dataclass
class Outcome:
    records: list[dict]
    report_dir: Path
    error: RemoteError | None = None
    report: Report | None = None

    @property
    def exit_code(self) -> int:
        if self.error is not None:
            return self.error.exit_code
        return 0 if self.records and all(r["status"] == "pass" for r in self.records) else 1


def _last_line(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 400))
            lines = [line for line in f.read().decode("utf-8", "replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""


def _popcorn_version(executable: str) -> str | None:
    try:
        done = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"\d+\.\d+\.\d+", done.stdout + done.stderr)
    return match[0] if match else None


def send(plan: Plan, *, timeout_s: float = DEFAULT_TIMEOUT_S,
         on_wait: Callable[[float, str], None] | None = None, poll_s: float = 0.5) -> Outcome:
    """Run popcorn-cli, keep its raw output under plan.report_dir, parse it, write the ledger records.

    The records are written only after popcorn-cli finished and its output was parsed (or failed to
    parse, which is recorded as an error): never a half-written attempt.
    """
    if plan.popcorn is None:
        raise RemoteError(f"popcorn-cli is not installed: {POPCORN_INSTALL_HINT}", "not_installed", 2)
    plan.report_dir.mkdir(parents=True, exist_ok=True)
    (plan.report_dir / "command.txt").write_text(plan.command_line + "\n", encoding="utf-8")
    started = utc_now()
    context = SendContext(_submission_dict(plan.submission), plan.mode, plan.leaderboard, plan.gpu,
                          _shown(plan.report_dir), started.isoformat(timespec="seconds"), plan.popcorn_version)
    send_id = uuid.uuid4().hex
    note_sent({"id": send_id, "time": started.isoformat(timespec="seconds"), "leaderboard": plan.leaderboard,
               "category": mode_category(plan.mode), "mode": plan.mode, "submission": context.submission,
               "outcome": "pending"})
    stdout_path, stderr_path = plan.report_dir / "stdout.txt", plan.report_dir / "stderr.txt"
    error, report, records = None, None, []
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        process = subprocess.Popen(plan.command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=REPO_ROOT)
        clock = time.monotonic()
        try:
            while process.poll() is None:
                elapsed = time.monotonic() - clock
                if elapsed > timeout_s:
                    error = RemoteError(f"no report after {timeout_s:.0f} s: popcorn-cli stopped (the run may still "
                                        "finish on the server; its result is not recorded here)", "timeout")
                    break
                if on_wait:
                    on_wait(elapsed, _last_line(stderr_path))
                time.sleep(poll_s)
        except KeyboardInterrupt:
            error = RemoteError("interrupted while waiting: popcorn-cli stopped (the run may still finish on the "
                                "server; its result is not recorded here)", "interrupted", 130)
        if process.poll() is None:
            process.kill()
            process.wait()
    finished = utc_now().isoformat(timespec="seconds")
    stderr_text = stderr_path.read_text(encoding="utf-8", errors="replace")
    if error is None and process.returncode != 0:
        error = classify_failure(stderr_text, process.returncode)
    if error is None:
        output_file = plan.report_dir / "report.txt"
        raw = (output_file.read_text(encoding="utf-8", errors="replace") if output_file.is_file()
               else stdout_path.read_text(encoding="utf-8", errors="replace"))
        try:
            report = parse_report(raw)
            records = records_from_report(report, context, finished)
        except (ReportFormatError, ValueError) as problem:
            error = RemoteError(f"the report could not be parsed ({problem}); raw output kept in "
                                f"{_shown(plan.report_dir)}", "unparsed")
    if error is not None:
        records = [error_record(context, error, finished)]
    retry_at = None
    if error is not None and (match := _RATE_RE.search(stderr_text)):
        retry_at = (utc_now() + timedelta(seconds=int(match["seconds"]))).isoformat(timespec="seconds")
    note_sent({"id": send_id, "time": finished, "outcome": error.kind if error else "report",
               **({"retry_at": retry_at} if retry_at else {})})
    for record in records:
        ledger.append(record)
    return Outcome(records, plan.report_dir, error, report)


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------------
# What the CLI shows after a send (pure functions of the records)
# ---------------------------------------------------------------------------------------------
def outcome_rows(records: list[dict]) -> list[tuple[str, str, str, str, str, str]]:
    """(run, mode, status, shapes passed, geomean of the means in µs, reason) per record."""
    rows = []
    for record in records:
        remote = record.get("remote") or {}
        results = record.get("results") or []
        passed = sum(r["status"] == "pass" for r in results)
        means = [r["stats"]["mean"] for r in results if r.get("stats") and r["stats"].get("mean")]
        geomean = statistics.geometric_mean(means) / 1e3 if means else None
        rows.append((remote.get("run") or "-", record["mode"], record["status"],
                     f"{passed}/{len(results)}" if results else "-",
                     f"{geomean:.1f}" if geomean is not None and len(means) == len(results) else "-",
                     record.get("reason", "")))
    return rows


def score_lines(records: list[dict]) -> list[str]:
    """The leaderboard score of each run that has one, marked approximate when recomputed from printed means."""
    lines = []
    for record in records:
        remote = record.get("remote") or {}
        if remote.get("score") is None:
            continue
        score_us = remote["score"] * 1e6
        how = ("≈ geomean of the ranked means as printed (approximate)" if remote.get("score_approximate")
               else "as reported by the server")
        lines.append(f"score ({remote.get('run')}): {score_us:.2f} µs = {remote['score']:.4g} s, {how}")
    return lines
