"""The ledger record: the one shape every result has, local or remote, and the readers the views share.

A record is a plain JSON object (one line of results/ledger.jsonl; harness/results/ledger.py writes and reads the
file). Its fields, documented once here as TypedDicts; `stats` values are nanoseconds. `new_record`
builds one from plain values (run/protocol.py and remote/submit.py call it); `load` reads the ledger, checks every
record once and fills what older records lack, so views read fields directly.
"""
from __future__ import annotations

import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import TypedDict

from harness.results import ledger
from harness.paths import REPO_ROOT, in_repository

SCHEMA_VERSION = 2
EMULATOR_MARK = "gfx950 emulated (CPU): correctness only"  # in every table, record and note an emulated run touches
EMULATOR_ARCH = "gfx950-emulated"  # an emulated record's arch: never "gfx950", which counts as MI355X
SOURCES = ("local", "remote")
# A run's verdicts that fail it: a wrong answer, a crash, a spent time limit, a file the server would refuse.
FAILED = ("fail", "error", "timeout", "rejected")
REJECTED_PREFIX = "passes here, but the server would reject it"


class SubmissionInfo(TypedDict):
    number: int | None        # NNN of submissions/NNN_slug.py, None for any other file
    path: str                 # relative to the repository when inside it
    sha256: str               # of the file as it was run
    requirements: list[str]   # what it cannot run without: torch, triton, hip, aiter (harness/submission.py)
    optional: list[str]       # what it uses only where present (guarded imports and builds)
    numbered: bool            # one of this repository's submissions/NNN_slug.py; else an outside file, known by path and hash


class Device(TypedDict):
    name: str      # "NVIDIA H200", "cpu (x86_64)", "MI355X (remote)"
    arch: str      # "sm_90", "gfx950", "cpu"
    backend: str   # "cuda" | "rocm" | "cpu" | "remote"


class Stats(TypedDict):
    runs: int | None
    mean: float
    std: float | None
    err: float
    best: float | None
    worst: float | None


class CaseRecord(TypedDict):
    spec: dict           # {"batchsize": 4, "qseqlen": 1, "kvseqlen": 1024, "seed": 4217}, as written in task.yml
    status: str          # "pass" | "fail" | "error" | "timeout" | "skip" | "not run" (the run's limit was spent)
    message: str
    stats: Stats | None  # timed modes only
    notes: dict          # the submission's LAST_RUN_INFO (local), printed values (remote)
    accuracy: dict | None  # relative_error, outside_share, noise_floor, noise_multiple, warnings (harness/run/accuracy.py)


class Record(TypedDict):
    schema: int
    run_id: str
    source: str          # "local" | "remote"
    submission: SubmissionInfo
    mode: str            # "test" | "benchmark" | "leaderboard" | "profile"
    cases: str           # "official" | "small" | the cases file
    flush: str           # "fast" | "official" | "none"
    device: Device
    versions: dict       # torch, triton, aiter, python, harness (remote: popcorn)
    status: str          # "pass" | "rejected" (passes, the server would refuse it) | "fail" | "error" | "timeout" | "skip"
    reason: str          # one line
    results: list[CaseRecord]
    warnings: list[str]
    started: str         # ISO 8601, UTC
    finished: str
    remote: dict | None  # remote records only; keys in harness/remote/submit.py
    interpreter: bool    # Triton ran through TRITON_INTERPRET on a CPU: correctness counts, the times do not
    standin: str | None  # "aiter": AMD's aiter was the harness's stand-in (correctness only); None otherwise
    git: dict | None     # {"commit": "<sha>", "dirty": bool} of the checkout that ran it; None outside git
    estimate: dict | None  # mode "estimate" only: the MI355X model's figures (harness/estimate/runner.py), never stats
    protection: str | None  # "sandbox (bwrap)" | "fallback: file checks" | "off" (harness/sandbox/guard.py); None: older
    emulator: dict | None  # HIP kernels ran on the gfx950 emulator (CPU), correctness only: per kernel launches
                           # and counts; its times are never compared or charted. None: not emulated
    gpu: dict | None  # {"index", "uuid"} a spread run pinned it to (harness/run/spread.py); None: serial or older


def now_iso() -> str:
    """A record's timestamps: ISO 8601 in UTC, to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def submission_info(submission) -> SubmissionInfo:
    """The record's view of a harness.submission.Submission (taken as it is, not imported: views never need it)."""
    return SubmissionInfo(number=submission.number, path=in_repository(submission.path), sha256=submission.sha256,
                          requirements=sorted(submission.requirements), optional=sorted(submission.optional),
                          numbered=submission.numbered)


def new_record(*, source: str, submission: SubmissionInfo, mode: str, cases: str, flush: str, device: Device,
               versions: dict, status: str, reason: str, results: list, warnings: list, started: str,
               finished: str, remote: dict | None = None, interpreter: bool = False,
               git: dict | None = None, standin: str | None = None, estimate: dict | None = None,
               protection: str | None = None, emulator: dict | None = None, gpu: dict | None = None) -> Record:
    return Record(schema=SCHEMA_VERSION, run_id=ledger.new_run_id(), source=source, submission=submission,
                  mode=mode, cases=cases, flush=flush, device=device, versions=dict(versions), status=status,
                  reason=reason, results=list(results), warnings=list(warnings), started=started,
                  finished=finished, remote=remote, interpreter=interpreter, standin=standin, git=git,
                  estimate=estimate, protection=protection, emulator=emulator, gpu=gpu)


# ---------------------------------------------------------------- reading and checking, in one place

class MalformedRecordWarning(UserWarning):
    """A ledger line that is valid JSON but not a record this harness can read."""


def _requirements_from_file(path: str, root: Path) -> list:
    """Older records do not carry requirements: read them from the file, when it is still there."""
    from harness.submission import needs_of

    file = Path(path) if Path(path).is_absolute() else Path(root) / path
    try:
        return sorted(needs_of(file.read_text(encoding="utf-8", errors="replace")))
    except OSError:
        return []


# ---------------------------------------------------------------- upgrading older records, one version at a time

def _upgrade_1_to_2(raw: dict) -> dict:
    """Version 1 called cases a spent limit left unrun "skip" (and a run of them a pass), a run whose case hit the
    limit "error", and a file the server would refuse a plain "pass"; version 2 says "not run", "timeout" and
    "rejected"."""
    raw = dict(raw, schema=2)
    cases = [dict(case) for case in raw.get("results") or []]
    for case in cases:
        if case.get("status") == "skip" and str(case.get("message") or "").startswith("not run:"):
            case["status"] = "not run"
    raw["results"] = cases
    statuses = [case.get("status") for case in cases]
    if raw.get("mode") in ("compile", "estimate") or raw.get("source") == "remote":
        return raw
    if raw.get("status") in ("pass", "error") and "fail" not in statuses and (
            "timeout" in statuses or "not run" in statuses) and not (
            raw.get("status") == "error" and "error" in statuses):
        index = next(i for i, status in enumerate(statuses) if status in ("timeout", "not run"))
        raw["status"] = "timeout"
        raw["reason"] = f"case {index + 1}: {cases[index].get('message') or 'timed out'}"
    elif raw.get("status") == "pass" and str(raw.get("reason") or "").startswith(REJECTED_PREFIX):
        raw["status"] = "rejected"
    return raw


UPGRADES = {1: _upgrade_1_to_2}  # version -> the function that lifts a record of it one version up


def upgraded(raw: dict) -> dict:
    """The record as the current schema has it (older versions lifted one step at a time)."""
    version = int(raw.get("schema", 1))
    while version < SCHEMA_VERSION:
        raw = UPGRADES[version](raw)
        version += 1
    return raw


def _checked_case(raw: dict) -> CaseRecord:
    stats = raw.get("stats")
    if stats is not None:
        stats = dict(stats)
        stats["mean"] = float(stats["mean"])
        stats["err"] = float(stats.get("err") or 0.0)
    spec = dict(raw["spec"])
    for key in ("batchsize", "kvseqlen"):
        spec[key] = int(spec[key])
    return CaseRecord(spec=spec, status=str(raw["status"]), message=str(raw.get("message") or ""), stats=stats,
                      notes=dict(raw.get("notes") or {}), accuracy=raw.get("accuracy"))


def checked(raw: dict, root: Path = REPO_ROOT, _requirements_cache: dict | None = None) -> Record:
    """The record with every field present and typed; ValueError (or KeyError/TypeError) when it cannot be."""
    raw = upgraded(raw)
    sub = dict(raw["submission"])
    path = str(sub.get("path") or "")
    requirements, optional = sub.get("requirements"), sub.get("optional")
    if requirements is None:
        cache = {} if _requirements_cache is None else _requirements_cache
        needs = cache.setdefault(path, _requirements_from_file(path, root) if path else [])
        requirements = [need.name for need in needs if not need.optional]
        optional = [need.name for need in needs if need.optional]
    device = raw["device"]
    if raw.get("source", "local") not in SOURCES:
        raise ValueError(f"unknown source {raw.get('source')!r}")
    numbered = sub.get("numbered")
    if numbered is None:  # older records: a number meant a file of submissions/
        numbered = sub.get("number") is not None and path.startswith("submissions/")
    interpreter = raw.get("interpreter")
    if interpreter is None:  # older records: Triton on a CPU always ran through the interpreter
        interpreter = device.get("backend") == "cpu" and "triton" in requirements
    return Record(
        schema=int(raw.get("schema", SCHEMA_VERSION)), run_id=str(raw.get("run_id", "")),
        source=raw.get("source", "local"),
        submission=SubmissionInfo(number=sub.get("number") if numbered else None, path=path,
                                  sha256=str(sub.get("sha256") or ""), requirements=sorted(requirements),
                                  optional=sorted(optional or []), numbered=bool(numbered)),
        mode=str(raw["mode"]), cases=str(raw.get("cases", "?")), flush=str(raw.get("flush") or "none"),
        device=Device(name=str(device.get("name", "unknown device")), arch=str(device.get("arch", "")),
                      backend=str(device.get("backend", ""))),
        versions=dict(raw.get("versions") or {}), status=str(raw["status"]), reason=str(raw.get("reason") or ""),
        results=[_checked_case(case) for case in raw.get("results") or []],
        warnings=[str(w) for w in raw.get("warnings") or []],
        started=str(raw.get("started") or ""), finished=str(raw.get("finished") or ""),
        remote=dict(raw["remote"]) if raw.get("remote") else None, interpreter=bool(interpreter),
        standin=str(raw["standin"]) if raw.get("standin") else None, git=dict(raw["git"]) if raw.get("git") else None,
        estimate=dict(raw["estimate"]) if raw.get("estimate") else None, protection=raw.get("protection"),
        emulator=_emulator_of(raw), gpu=dict(raw["gpu"]) if raw.get("gpu") else None)


def _emulator_of(raw: dict) -> dict | None:
    """The emulator's figures; {} for an emulated record that launched nothing (its device says so)."""
    if raw.get("emulator") is not None:
        return dict(raw["emulator"])
    return {} if (raw.get("device") or {}).get("arch") == EMULATOR_ARCH else None


def usable(raws: list[dict], root: Path = REPO_ROOT) -> list[Record]:
    """The records that can be read, checked; any other is left out with one MalformedRecordWarning."""
    found, bad, cache = [], 0, {}
    for raw in raws:
        try:
            found.append(checked(raw, root, cache))
        except (KeyError, TypeError, ValueError, AttributeError):
            bad += 1
    if bad:
        warnings.warn(f"left out {bad} malformed ledger record(s)", MalformedRecordWarning, stacklevel=2)
    return found


def load(path=None, root: Path = REPO_ROOT) -> list[Record]:
    """Every readable record of the ledger, in file order (torn lines and malformed records left out, warned)."""
    return usable(ledger.read(path), root)


# ---------------------------------------------------------------- what the views ask of records

def shape_of(spec: dict) -> tuple:
    """(batch, q length, kv length): what a case's timing depends on (the seed does not)."""
    return (int(spec.get("batchsize", 0)), int(spec.get("qseqlen", 1)), int(spec.get("kvseqlen", 0)))


def shape_label(shape: tuple) -> str:
    batch, qseq, kv = shape
    kv_text = f"{kv // 1024}k" if kv and kv % 1024 == 0 else str(kv)
    return f"b{batch} kv{kv_text}" if qseq == 1 else f"b{batch} q{qseq} kv{kv_text}"


def label(record: Record) -> str:
    """'120_hip_fp8_mfma' for a numbered submission; an outside file by its path, so it shadows none."""
    sub = record["submission"]
    if sub["numbered"]:
        return Path(sub["path"]).stem
    return sub["path"] or "?"


def identity(record: Record):
    """Which submission a record is of: a numbered one by its number, an outside file by its path and hash."""
    sub = record["submission"]
    return sub["number"] if sub["numbered"] else (sub["path"], sub["sha256"])


def real_timings(record: Record) -> bool:
    """Times that say something about a GPU kernel: not taken through the Triton interpreter, the aiter stand-in or
    the gfx950 emulator."""
    return not record["interpreter"] and not record.get("standin") and not emulated(record)


def emulated(record: Record) -> bool:
    """HIP kernels ran on the gfx950 emulator (CPU): correctness only."""
    return record.get("emulator") is not None or record["device"]["arch"] == EMULATOR_ARCH


def case_means(record: Record) -> dict:
    """shape -> mean ns for every case that passed and was timed (the last one wins on repeats)."""
    return {shape_of(case["spec"]): case["stats"]["mean"] for case in record["results"]
            if case["status"] == "pass" and case["stats"] is not None}


def case_verdicts(record: Record) -> dict:
    return {shape_of(case["spec"]): case["status"] for case in record["results"]}


def remote_run(record: Record) -> str | None:
    """'public' / 'secret' for a remote record, None for a local one."""
    return (record["remote"] or {}).get("run") if record["source"] == "remote" else None


def group_key(record: Record) -> tuple:
    """Records comparable with each other: same device, mode, case set and remote run."""
    return (record["device"]["name"], record["mode"], record["cases"], remote_run(record))


def latest_by(records: list[Record], key) -> dict:
    """key(record) -> the most recently finished record with that key (file order breaks ties)."""
    latest: dict = {}
    for record in records:
        slot = key(record)
        if slot not in latest or record["finished"] >= latest[slot]["finished"]:
            latest[slot] = record
    return latest


def machine_slot(record: dict) -> tuple:
    """One file's runs of one mode and case set on one machine, whatever the device label (CPU or emulated)."""
    return (identity(record), record["mode"], record["cases"], record["source"],
            record["device"]["backend"], remote_run(record))


def without_outranked_skips(runs: list[dict]) -> list[dict]:
    """The runs less each skip that a newer run of the same file on the same machine answered (a HIP file
    skipped on the plain CPU, then passed on the emulator there): the older skip is no longer the news."""
    answered = latest_by([r for r in runs if r["status"] != "skip"], machine_slot)

    def outranked(record: dict) -> bool:
        newer = answered.get(machine_slot(record))
        return newer is not None and newer["finished"] >= record["finished"]

    return [r for r in runs if not (r["status"] == "skip" and outranked(r))]
