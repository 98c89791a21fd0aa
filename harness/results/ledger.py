"""The ledger file: every result ever recorded, one JSON record per line in results/ledger.jsonl.

Append-only. Each record is written with a single os.write on an O_APPEND descriptor under an
exclusive flock, so two harness runs never interleave and a killed run leaves at most one torn
last line, which readers skip with a warning. Only the parent process writes here (never a
submission's worker), so a crashing submission cannot tear a record. The record's shape is
harness/results/records.py's; this module only moves lines (the remote sent log uses it too).
"""
import errno
import fcntl
import json
import os
import uuid
import warnings

from harness.paths import ledger_file


class TornLineWarning(UserWarning):
    """A ledger line that is not a complete JSON record (a run killed mid-write)."""


def new_run_id() -> str:
    return uuid.uuid4().hex


def append(record: dict, path: str | os.PathLike | None = None) -> None:
    """Append one record atomically: one write of one line under an exclusive lock. OSError when it cannot."""
    target = ledger_file(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, sort_keys=True) + "\n").encode()
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


def why_unwritten(error: OSError) -> str:
    """What stopped a write, in words a user can act on (a full disk is not a permissions problem)."""
    said = error.strerror or str(error)
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"no space left on the device ({said}); free some space and run it again"
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied ({said}); fix the file's permissions and run it again"
    if error.errno == errno.EROFS:
        return f"the file system is read-only ({said}); point $HARNESS_LEDGER or $HARNESS_RESULTS elsewhere"
    return said


def _last_byte(path) -> bytes:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1)


def read(path: str | os.PathLike | None = None) -> list[dict]:
    """Every complete JSON object in file order; torn or foreign lines are skipped with a TornLineWarning."""
    target = ledger_file(path)
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
