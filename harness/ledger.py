"""The ledger: every result ever recorded, one JSON record per line in results/ledger.jsonl.

Append-only. Each record is written with a single os.write on an O_APPEND descriptor under an
exclusive flock, so two harness runs never interleave and a killed run leaves at most one torn
last line, which readers skip with a warning. Only the parent process writes here (never a
submission's worker), so a crashing submission cannot tear a record.

A record (local and remote runs share the shape; `stats` values are nanoseconds):
{
  "schema": 1, "run_id": "<hex>", "source": "local" | "remote",
  "submission": {"number": 120, "path": "submissions/120_hip_fp8_mfma.py", "sha256": "<hex>"},
  "mode": "test" | "benchmark" | "leaderboard" | "profile",
  "cases": "official" | "small" | "<file>", "flush": "fast" | "official" | "none",
  "device": {"name": "NVIDIA H200", "arch": "sm_90", "backend": "cuda" | "rocm" | "cpu" | "remote"},
  "versions": {"torch": ..., "triton": ..., "aiter": ..., "python": ..., "harness": ...},
  "status": "pass" | "fail" | "skip" | "error", "reason": "<one line>",
  "results": [{"spec": {"batchsize": 4, "qseqlen": 1, "kvseqlen": 1024, "seed": 4217},
               "status": "pass" | "fail" | "error" | "timeout" | "skip", "message": "...",
               "stats": {"runs": n, "mean": ns, "std": ns, "err": ns, "best": ns, "worst": ns} | null,
               "notes": {...}}],
  "warnings": ["..."], "started": "<iso8601>", "finished": "<iso8601>",
  "remote": {...}   # remote records only: report file, public/secret run, rounding, approximate score
}
"""
import fcntl
import json
import os
import uuid
import warnings
from pathlib import Path

SCHEMA_VERSION = 1
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LEDGER = REPO_ROOT / "results" / "ledger.jsonl"
LEDGER_ENV = "HARNESS_LEDGER"  # point the harness at another ledger file (tests, experiments)


class TornLineWarning(UserWarning):
    """A ledger line that is not a complete JSON record (a run killed mid-write)."""


def ledger_path(path: str | os.PathLike | None = None) -> Path:
    """The ledger file: the argument, else $HARNESS_LEDGER, else results/ledger.jsonl."""
    return Path(path or os.environ.get(LEDGER_ENV) or DEFAULT_LEDGER)


def new_run_id() -> str:
    return uuid.uuid4().hex


def append(record: dict, path: str | os.PathLike | None = None) -> None:
    """Append one record atomically: one write of one line under an exclusive lock."""
    target = ledger_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps({"schema": SCHEMA_VERSION, **record}, sort_keys=True) + "\n").encode()
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        # A torn line left by a killed writer must not swallow this record: start on a fresh line.
        if os.fstat(fd).st_size and _last_byte(target) != b"\n":
            line = b"\n" + line
        written = os.write(fd, line)
        if written != len(line):
            raise OSError(f"short write to {target}: {written} of {len(line)} bytes")
        os.fsync(fd)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _last_byte(path: Path) -> bytes:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1)


def read(path: str | os.PathLike | None = None) -> list[dict]:
    """Every complete record in file order; torn or foreign lines are skipped with a TornLineWarning."""
    target = ledger_path(path)
    if not target.exists():
        return []
    records = []
    with open(target, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                warnings.warn(f"{target}:{number}: skipped a torn ledger line", TornLineWarning, stacklevel=2)
                continue
            if isinstance(record, dict):
                records.append(record)
    return records


def latest(records: list[dict], *, number: int | None = None, device: str | None = None,
           mode: str | None = None, source: str | None = None) -> dict | None:
    """The most recent record matching every filter given (by finish time, then file order)."""
    best = None
    for record in records:
        if number is not None and record.get("submission", {}).get("number") != number:
            continue
        if device is not None and record.get("device", {}).get("name") != device:
            continue
        if mode is not None and record.get("mode") != mode:
            continue
        if source is not None and record.get("source") != source:
            continue
        if best is None or record.get("finished", "") >= best.get("finished", ""):
            best = record
    return best
