"""Remote submission: send a submission to the real MI355X leaderboard through popcorn-cli.

Read top to bottom:
  1. settings (leaderboard, deadline, rate limits, where raw reports go);
  2. `#!POPCORN` directives, read the way popcorn-cli reads them;
  3. the report parser, for both popcorn-cli generations (POPCORN_FACTS.md sections 0-1):
     <= v1.3.15 prints the server's text reports (per-shape timings), >= v1.3.16 a JSON summary;
  4. report -> ledger records (one per run and stage, public and secret runs apart);
  5. the server's error messages -> one clear line each;
  6. the rate-limit memory (results/remote/sent.jsonl);
  7. the local gate (lint, then a local test run or an ahead-of-time Triton compile);
  8. the flow: `plan()` decides what would be sent, `send()` runs popcorn-cli and records the outcome.
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
import json
import math
import os
import re
import shlex
import shutil
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
# 3. The report parser
# ---------------------------------------------------------------------------------------------
class ReportFormatError(ValueError):
    """popcorn's output is not a report this parser knows."""


_UNIT_NS = {"ns": 1.0, "µs": 1e3, "μs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}
_MISSING = "–"  # U+2013, what kernelbot's format_time prints for a missing value
_TIME_RE = re.compile(r"^(?P<value>\S+)(?: ± (?P<err>\S+))? (?P<unit>ns|µs|μs|us|ms|s)$")


@dataclasses.dataclass
class PrintedTime:
    """One printed time: its value in ns, one unit of its last printed digit in ns, and the text."""
    ns: float
    resolution_ns: float
    text: str


def _printed_number(number: str, unit_ns: float, text: str) -> PrintedTime:
    value = float(number)
    decimals = len(number.split(".", 1)[1]) if "." in number and "e" not in number.lower() else 0
    return PrintedTime(value * unit_ns, unit_ns * 10.0 ** -decimals, text)


def parse_time(text: str) -> tuple[PrintedTime | None, PrintedTime | None]:
    """`26.5 ± 0.04 µs` -> (mean, err); `25.9 µs` -> (value, None); `–` -> (None, None)."""
    text = text.strip()
    if text == _MISSING:
        return None, None
    match = _TIME_RE.match(text)
    if not match:
        raise ReportFormatError(f"not a printed time: {text!r}")
    unit_ns = _UNIT_NS[match["unit"]]
    try:
        value = _printed_number(match["value"], unit_ns, f"{match['value']} {match['unit']}")
        err = (_printed_number(match["err"], unit_ns, f"{match['err']} {match['unit']}")
               if match["err"] else None)
    except ValueError:
        raise ReportFormatError(f"not a printed time: {text!r}") from None
    return value, err


def parse_spec(text: str) -> dict | None:
    """`seed: 4217; qseqlen: 1; kvseqlen: 1024; batchsize: 4` -> dict (keys, not positions); `None` -> None."""
    text = text.strip()
    if text == "None":
        return None
    spec = {}
    for part in text.split(";"):
        key, sep, value = part.partition(":")
        if not sep or not key.strip():
            raise ReportFormatError(f"not a test spec: {text!r}")
        value = value.strip()
        spec[key.strip()] = int(value) if re.fullmatch(r"-?\d+", value) else value
    return spec


def spec_line(spec: dict | None) -> str:
    """A spec in task.yml's key order, as the harness prints it everywhere else."""
    if spec is None:
        return "None"
    order = ["batchsize", "qseqlen", "kvseqlen", "seed"]
    keys = [k for k in order if k in spec] + [k for k in spec if k not in order]
    return "; ".join(f"{k}: {spec[k]}" for k in keys)


@dataclasses.dataclass
class ShapeResult:
    spec: dict | None
    status: str  # pass | fail | skip
    message: str = ""
    mean: PrintedTime | None = None
    err: PrintedTime | None = None
    best: PrintedTime | None = None
    worst: PrintedTime | None = None


@dataclasses.dataclass
class Stage:
    name: str  # test | benchmark | leaderboard
    verdict: str = ""  # the server's short verdict line, e.g. "✅ Testing successful"
    status: str = "pass"  # pass | fail | error | skip
    reason: str = ""
    results: list[ShapeResult] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class RunReport:
    """One reporter's report: the public run ("MI355X on GitHub") or the secret one."""
    run: str  # public | secret
    title: str
    delivered: bool  # the runner delivered results (title ✅ success)
    status_lines: list[str]
    stages: list[Stage]
    workflow_url: str | None = None
    system: dict = dataclasses.field(default_factory=dict)
    failure: str = ""  # runner failure, crash or compile failure, one line
    logs: dict = dataclasses.field(default_factory=dict)  # header -> content
    score: float | None = None  # seconds; the server's (json generation) or recomputed (text)
    score_approximate: bool = False


@dataclasses.dataclass
class Report:
    generation: str  # text (popcorn <= v1.3.15) | json (>= v1.3.16)
    runs: list[RunReport]


_JSON_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def split_reports(text: str) -> list[str]:
    """popcorn's printout of the server's reports array -> the report strings, JSON escapes undone.

    popcorn dropped the array's brackets and turned every two-char `\\n` into a newline, so the text is
    `"<report>","<report>"` with real newlines; an escaped backslash followed by n became a backslash
    at a line end, which is decoded back to a literal backslash-n here.
    """
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):  # the raw array, e.g. kept from an API call
        text = text[1:-1].strip()
    if not text.startswith('"'):
        raise ReportFormatError("the report does not start with a quoted report string")
    reports, i = [], 0
    while i < len(text):
        if text[i] != '"':
            raise ReportFormatError(f"unexpected text between reports at character {i}")
        i += 1
        out = []
        while True:
            if i >= len(text):
                raise ReportFormatError("a report string is not terminated")
            char = text[i]
            if char == '"':
                i += 1
                break
            if char != "\\":
                out.append(char)
                i += 1
                continue
            escaped = text[i + 1:i + 2]
            if escaped == "\n":  # popcorn's mangling of an escaped backslash + n
                out.append("\\n")
                i += 2
            elif escaped == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
            elif escaped in _JSON_ESCAPES:
                out.append(_JSON_ESCAPES[escaped])
                i += 2
            else:
                raise ReportFormatError(f"unknown escape \\{escaped} in a report")
        reports.append("".join(out))
        while i < len(text) and text[i] in ", \n\r\t":
            i += 1
    return reports


_TITLE_RE = re.compile(r"^\*\*(?P<name>.*?)(?: (?P<mark>✅ success|❌ failure))?\*\*$")
_LOG_HEADER_RE = re.compile(r"\n\n## (?P<header>[^\n]*):\n```\n")
_WORKFLOW_RE = re.compile(r"\(<(?P<url>https?://[^>]+)>\)")
_SYSTEM_RE = re.compile(r"^\* (?P<key>[^:]+): `(?P<value>.*)`$", re.M)
# Verdict lines of kernelbot's make_short_report, per stage.
_VERDICTS = {
    "test": ("Testing successful", "Testing failed", "Running tests failed", "Tests missing"),
    "benchmark": ("Benchmarking successful", "Benchmarking failed", "Running benchmarks failed",
                  "Benchmarks missing"),
    "leaderboard": ("Leaderboard run successful", "Leaderboard run failed", "Running leaderboard failed",
                    "Leaderboard missing"),
}
_STAGE_LOGS = {"test": ("Test log",), "benchmark": ("Benchmarks",), "leaderboard": ("Ranked Benchmark",)}


def _stage_from_verdict(line: str) -> Stage | None:
    body = line[2:] if line[:2] in ("✅ ", "❌ ") else line
    for name, (ok, failed, crashed, missing) in _VERDICTS.items():
        if body == ok:
            return Stage(name, line, "pass")
        if body == failed:
            return Stage(name, line, "fail", body.lower())
        if body.startswith(crashed):
            detail = body[len(crashed):].strip(" ()")
            kind = "timed out on the server" if detail == "timeout" else (detail or "crashed on the server")
            return Stage(name, line, "error", f"{crashed.lower()}: {kind}")
        if body == missing:
            return Stage(name, line, "skip", body.lower())
    return None


def _parse_test_log(content: str) -> list[ShapeResult]:
    results: list[ShapeResult] = []
    for line in content.split("\n"):
        if line.startswith("✅ ") or line.startswith("❌ "):
            results.append(ShapeResult(parse_spec(line[2:]), "pass" if line[0] == "✅" else "fail"))
        elif results:
            text = line[2:] if line.startswith("> ") and not results[-1].message else line
            results[-1].message = f"{results[-1].message}\n{text}" if results[-1].message else text
    return results


def _parse_benchmark_log(content: str) -> list[ShapeResult]:
    results: list[ShapeResult] = []
    lines = content.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("❗"):
            i += 1
        elif line.startswith("❌ ") and line.endswith(" failed testing:"):
            error_lines = []
            i += 2  # the verdict line, then the empty line kernelbot puts before the raw error
            while i < len(lines) and lines[i].strip():
                error_lines.append(lines[i])
                i += 1
            message = "\n".join(error_lines).replace("\\n", "\n")  # the raw error keeps literal \n
            results.append(ShapeResult(parse_spec(line[2:-len(" failed testing:")]), "fail", message))
        elif line.startswith(" ⏱ "):
            if not results:
                raise ReportFormatError("a timing line comes before any shape")
            results[-1].mean, results[-1].err = parse_time(line[3:])
            if results[-1].mean is None:
                results[-1].status = "skip"
                results[-1].message = "not run: the ranked run stopped at an earlier failure"
            i += 1
        elif line.startswith(" ⚡ "):
            if not results:
                raise ReportFormatError("a best/worst line comes before any shape")
            best, _, worst = line[3:].partition(" 🐌 ")
            results[-1].best, results[-1].worst = parse_time(best)[0], parse_time(worst)[0]
            i += 1
        else:
            results.append(ShapeResult(parse_spec(line), "pass"))
            i += 1
    return results


def _split_logs(long_report: str) -> tuple[str, dict[str, str]]:
    """A long report -> (its text outside logs, {log header: content}); logs are ``` fenced blocks.

    Text can follow a log too: a stage that crashed after an earlier stage's log appends its
    `# Running failed` text after that log's closing fence.
    """
    pieces = _LOG_HEADER_RE.split(long_report)
    texts, logs = [pieces[0]], {}
    for header, content in zip(pieces[1::2], pieces[2::2]):
        fence = content.rfind("```")
        logs[header] = content[:fence] if fence >= 0 else content
        texts.append(content[fence + 3:] if fence >= 0 else "")
    return "\n".join(texts), logs


def _failure_line(text: str) -> str:
    if "# Compilation failed" in text:
        return "compilation failed on the server"
    match = re.search(r"exited with error code \*\*(-?\d+)\*\* after ([\d.]+) seconds", text)
    if match:
        return f"the run exited with error code {match[1]} after {match[2]} s"
    match = re.search(r"\*\*timed out\*\* after ([\d.]+) seconds", text)
    if match:
        return f"the run timed out after {match[1]} s"
    match = re.search(r"ran successfully in ([\d.]+) seconds, but did not pass all tests", text)
    if match:
        return f"tests ran in {match[1]} s but did not all pass"
    return ""


def parse_run(text: str) -> RunReport:
    """One report string (title, `> ` status lines, long report) -> RunReport."""
    lines = text.split("\n")
    title = _TITLE_RE.match(lines[0].strip()) if lines else None
    if not title:
        raise ReportFormatError(f"a report does not start with a **title** line: {lines[0][:80]!r}")
    status_lines = []
    i = 1
    while i < len(lines) and lines[i].startswith(">"):
        status_lines.append(lines[i][1:].strip())
        i += 1
    leading, logs = _split_logs("\n".join(lines[i:]))
    run = RunReport(run="secret" if title["name"].rstrip().endswith("(secret)") else "public",
                    title=lines[0].strip(), delivered=title["mark"] == "✅ success",
                    status_lines=status_lines, stages=[], logs=logs,
                    system={m["key"]: m["value"] for m in _SYSTEM_RE.finditer(leading)})
    for line in status_lines:
        url = _WORKFLOW_RE.search(line)
        if url:
            run.workflow_url = url["url"]
        stage = _stage_from_verdict(line)
        if stage:
            run.stages.append(stage)
    run.failure = _failure_line(leading)
    if not run.delivered:
        extra = [line for line in status_lines if not line.startswith("Workflow") and "Downloading" not in line]
        run.failure = run.failure or (extra[-1] if extra else "the runner failed")
    elif any(line == "❌ Compilation failed" for line in status_lines):
        run.failure = "compilation failed on the server"
    for stage in run.stages:
        for header, content in logs.items():
            if header in _STAGE_LOGS[stage.name] or (stage.name == "test" and header.startswith("✅ Passed ")):
                parse = _parse_test_log if stage.name == "test" else _parse_benchmark_log
                stage.results = parse(content)
        if stage.status == "error" and run.failure:
            stage.reason = f"{stage.reason} ({run.failure})"
        failed = next((r for r in stage.results if r.status == "fail"), None)
        if failed is not None:
            first = failed.message.strip().splitlines()[0] if failed.message.strip() else "failed"
            stage.status = "fail"
            stage.reason = f"{stage.reason or 'a shape failed'}: {spec_line(failed.spec)}: {first}"
    ranked = next((s for s in run.stages if s.name == "leaderboard"), None)
    if ranked is not None and ranked.status == "pass" and run.run == "public":
        run.score = ranked_geomean_seconds(ranked.results)
        run.score_approximate = run.score is not None
    return run


def ranked_geomean_seconds(results: list[ShapeResult]) -> float | None:
    """The leaderboard score as kernelbot computes it (geomean of ranked means, in s), from printed means."""
    means = [r.mean.ns for r in results if r.mean is not None]
    if not means or len(means) != len(results) or min(means) <= 0:
        return None
    return math.exp(sum(math.log(m / 1e9) for m in means) / len(means))


_SCORE_LINE_RE = re.compile(r"^Geomean score \((?P<scope>public|secret)\) on (?P<runner>.+): (?P<score>\S+) s$", re.M)


def parse_json_summary(text: str) -> Report:
    """popcorn >= v1.3.16: optional `Geomean score (...)` lines, then a pretty JSON summary."""
    start = text.find("{")
    if start < 0:
        raise ReportFormatError("no JSON summary in the report")
    try:
        summary, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as error:
        raise ReportFormatError(f"the JSON summary does not parse: {error.msg}") from None
    if not isinstance(summary, dict) or not isinstance(summary.get("runs"), list):
        raise ReportFormatError("the JSON summary has no runs list")
    runs = []
    for entry in summary["runs"]:
        mode = entry.get("mode")
        if mode not in MODES:
            continue  # e.g. profile runs: nothing to record
        passed = bool(entry.get("passed"))
        stage = Stage(mode, f"passed: {str(passed).lower()}", "pass" if passed else "fail",
                      "" if passed else f"{mode} run did not pass")
        score = entry.get("score")
        runs.append(RunReport(run="secret" if entry.get("secret") else "public",
                              title=f"{entry.get('runner', '?')} ({'secret' if entry.get('secret') else 'public'})",
                              delivered=True, status_lines=[], stages=[stage],
                              system={"submission_id": summary.get("submission_id"),
                                      "start_time": entry.get("start_time"), "end_time": entry.get("end_time")},
                              score=float(score) if mode == "leaderboard" and score is not None else None))
    return Report("json", runs)


def parse_report(text: str) -> Report:
    """Whatever popcorn-cli printed (stdout or its --output file) -> Report, either generation."""
    stripped = text.strip()
    if not stripped:
        raise ReportFormatError("popcorn-cli printed no report")
    if stripped.startswith('"') or stripped.startswith('["'):
        runs = [parse_run(report) for report in split_reports(stripped)]
        if not runs:
            raise ReportFormatError("the report holds no runs")
        return Report("text", runs)
    if stripped.startswith("{") or _SCORE_LINE_RE.match(stripped):
        return parse_json_summary(stripped)
    raise ReportFormatError(f"unknown report format, starting {stripped[:60]!r}")


# ---------------------------------------------------------------------------------------------
# 4. Report -> ledger records
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
# 5. The server's and popcorn-cli's error messages -> one line each
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
# 6. Rate-limit memory: one JSON line per event in results/remote/sent.jsonl
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
# 7. The local gate
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
    try:
        from harness.lint import lint_file
    except ImportError:
        return GateCheck("lint", False, ["harness.lint is not available, so the server's rules were not checked"])
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
        from harness.aot import compile_submission
    except ImportError:
        return GateCheck("gfx950 compile", False, ["harness.aot is not available to compile the Triton kernels"])
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
# 8. The flow: plan, then send
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
        geomean = math.exp(sum(math.log(m) for m in means) / len(means)) / 1e3 if means else None
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
