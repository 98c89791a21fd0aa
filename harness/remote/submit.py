"""Remote submission: send a submission to the real MI355X leaderboard through popcorn-cli.

Read top to bottom:
  1. settings (deadline, popcorn-cli, the remote device);
  2. report -> ledger records (one per run and stage, public and secret runs apart); the report
     itself is parsed by harness/remote/popcorn_report.py, popcorn-cli's errors by harness/remote/popcorn_errors.py;
  3. the flow: `plan()` decides what would be sent (names, command, rate limit: harness/remote/ratelimit.py),
     the CLI runs the gate (harness/remote/gate.py), `send()` runs popcorn-cli and records the outcome.
Nothing here prints: harness/cli.py shows what these functions return.

Ledger records written here (shape in harness/results/records.py) carry source "remote", device
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
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

from harness import __version__, paths
from harness.results import ledger
from harness.results import records
from harness.run.cases import MODES as LOCAL_MODES
from harness.checks.directives import GPU as DEFAULT_GPU
from harness.checks.directives import LEADERBOARD as DEFAULT_LEADERBOARD
from harness.checks.directives import read_directives
from harness.remote.popcorn_errors import RATE_LIMIT_MESSAGE, RemoteError, classify_failure
from harness.remote.popcorn_report import Report, ReportFormatError, ShapeResult, Stage, parse_report
from harness.remote.ratelimit import RateCheck, check_rate_limit, mode_category, note_sent, utc_now

# ---------------------------------------------------------------------------------------------
# 1. Settings
# ---------------------------------------------------------------------------------------------
MODES = LOCAL_MODES[:3]  # popcorn has no profile mode
# kernelbot's submission.check_deadline refuses every mode after this (problems/amd_202602.yaml).
DEADLINE = datetime(2026, 4, 7, 7, 59, tzinfo=timezone.utc)
# A leaderboard-mode run does tests (900 s), benchmarks (900 s) and the ranked run (1200 s), plus a queue.
DEFAULT_TIMEOUT_S = 3600
POPCORN_EXECUTABLES = ("popcorn-cli", "popcorn")
FIRST_JSON_SUMMARY_VERSION = (1, 3, 16)  # from here on popcorn-cli prints a JSON summary without timings
POPCORN_INSTALL_HINT = ("install it from https://github.com/gpu-mode/popcorn-cli/releases or with "
                        "`curl -fsSL https://raw.githubusercontent.com/gpu-mode/popcorn-cli/main/install.sh | bash`")
REMOTE_DEVICE = {"name": "MI355X (remote)", "arch": "gfx950", "backend": "remote"}
ROUNDING_NOTE = ("stats are popcorn's printed values converted to ns (about 3 significant digits; "
                 "each stat's printed text and last-digit resolution are in results[].notes); "
                 "runs and std are not printed")


# ---------------------------------------------------------------------------------------------
# 2. Report -> ledger records
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
    submission: records.SubmissionInfo
    mode: str
    leaderboard: str
    gpu: str
    report_dir: str
    started: str
    popcorn_version: str | None = None


def _new_record(context: SendContext, mode: str, finished: str, *, status: str, reason: str, results: list,
                remote: dict, torch_version: str | None = None) -> records.Record:
    versions = {"harness": __version__, "popcorn": context.popcorn_version, "python": sys.version.split()[0]}
    if torch_version:
        versions["torch"] = torch_version
    return records.new_record(source="remote", submission=context.submission, mode=mode, cases="official",
                              flush="official", device=dict(REMOTE_DEVICE), versions=versions, status=status,
                              reason=reason, results=results, warnings=[], started=context.started,
                              finished=finished, remote=remote)


def records_from_report(report: Report, context: SendContext, finished: str) -> list[records.Record]:
    found = []
    for run in report.runs:
        stages = run.stages or [Stage(context.mode, "", "error", run.failure or "no verdict in the report")]
        for stage in stages:
            leaderboard_stage = stage.name == "leaderboard"
            remote = {"run": run.run, "stage": stage.name, "submitted_mode": context.mode,
                      "leaderboard": context.leaderboard, "gpu": context.gpu, "report_dir": context.report_dir,
                      "generation": report.generation, "verdict": stage.verdict, "title": run.title,
                      "workflow_url": run.workflow_url, "system": run.system,
                      "rounding": ROUNDING_NOTE if report.generation == "text" else
                      "no per-shape timings in this popcorn generation",
                      "score": run.score if leaderboard_stage else None,
                      "score_approximate": run.score_approximate if leaderboard_stage else False}
            found.append(_new_record(
                context, stage.name, finished,
                status=stage.status if run.delivered else "error",
                reason=stage.reason if run.delivered else f"the runner failed: {run.failure}",
                results=[_result_entry(r) for r in stage.results], remote=remote,
                torch_version=run.system.get("Torch")))
    return found


def error_record(context: SendContext, error: RemoteError, finished: str) -> records.Record:
    return _new_record(context, context.mode, finished, status="error", reason=str(error), results=[],
                       remote={"run": None, "stage": None, "submitted_mode": context.mode,
                               "leaderboard": context.leaderboard, "gpu": context.gpu,
                               "report_dir": context.report_dir, "generation": None, "error_kind": error.kind,
                               "score": None, "score_approximate": False})


# ---------------------------------------------------------------------------------------------
# 3. The flow: plan, then send
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
    report_dir = paths.remote_dir() / f"{now:%Y%m%dT%H%M%SZ}_{number}_{mode}"
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
    context = SendContext(records.submission_info(plan.submission), plan.mode, plan.leaderboard, plan.gpu,
                          paths.in_repository(plan.report_dir), started.isoformat(timespec="seconds"), plan.popcorn_version)
    send_id = uuid.uuid4().hex
    note_sent({"id": send_id, "time": started.isoformat(timespec="seconds"), "leaderboard": plan.leaderboard,
               "category": mode_category(plan.mode), "mode": plan.mode, "submission": context.submission,
               "outcome": "pending"})
    stdout_path, stderr_path = plan.report_dir / "stdout.txt", plan.report_dir / "stderr.txt"
    error, report, written = None, None, []
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        process = subprocess.Popen(plan.command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=paths.REPO_ROOT)
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
            written = records_from_report(report, context, finished)
        except (ReportFormatError, ValueError) as problem:
            error = RemoteError(f"the report could not be parsed ({problem}); raw output kept in "
                                f"{paths.in_repository(plan.report_dir)}", "unparsed")
    if error is not None:
        written = [error_record(context, error, finished)]
    retry_at = None
    if error is not None and (match := RATE_LIMIT_MESSAGE.search(stderr_text)):
        retry_at = (utc_now() + timedelta(seconds=int(match["seconds"]))).isoformat(timespec="seconds")
    note_sent({"id": send_id, "time": finished, "outcome": error.kind if error else "report",
               **({"retry_at": retry_at} if retry_at else {})})
    for record in written:
        ledger.append(record)
    return Outcome(written, plan.report_dir, error, report)
