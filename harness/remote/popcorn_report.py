"""Turns popcorn-cli's output into plain dataclasses, for both popcorn-cli generations
(docs/REMOTE.md, "What is kept"): up to v1.3.15 it prints the server's text reports (per-shape
timings), from v1.3.16 on a JSON summary (pass/fail and score per run, no timings); `parse_report` takes
either and returns a `Report` of `RunReport`s (public and secret runs apart) with their `Stage`s and
`ShapeResult`s, times kept as `PrintedTime`s. It only reads text and knows nothing about sending, the
local gate or the ledger (harness/remote/submit.py does those).
"""
from __future__ import annotations

import dataclasses
import json
import re
import statistics

from harness.run import cases

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
    order = cases.REQUIRED_KEYS  # task.yml's order: batchsize, qseqlen, kvseqlen, seed
    keys = [k for k in order if k in spec] + [k for k in spec if k not in order]
    return cases.spec_line({k: spec[k] for k in keys})


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


# popcorn turned the two characters `\\n` into a newline, so an escaped backslash followed by n arrives as a
# backslash at a line end: an odd run of backslashes before a newline. Put the n back before decoding.
_MANGLED_BACKSLASH_N = re.compile(r"(?<!\\)((?:\\\\)*)\\\n")
_DECODER = json.JSONDecoder(strict=False)  # strict=False: the strings hold real newlines


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
    text = _MANGLED_BACKSLASH_N.sub(lambda m: m.group(1) + "\\\\n", text)
    reports, i = [], 0
    while i < len(text):
        if text[i] != '"':
            raise ReportFormatError(f"unexpected text between reports at character {i}")
        try:
            report, i = _DECODER.raw_decode(text, i)
        except json.JSONDecodeError as error:
            raise ReportFormatError(f"a report string does not decode: {error.msg} at character {error.pos}") from None
        reports.append(report)
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
    return statistics.geometric_mean([m / 1e9 for m in means])


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
        if mode not in _VERDICTS:
            continue  # not one of the three stages, e.g. profile runs: nothing to record
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
