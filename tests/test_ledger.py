"""The ledger: append and read, torn-line recovery, filters, concurrent writers."""
import json
import subprocess
import sys

import pytest

from harness import paths
from harness.results import ledger
from harness.results import records as records_module
from pathlib import Path
from harness import exits
import helpers


def _record(number, finished, mode="benchmark", device="NVIDIA H200", source="local"):
    return {"source": source, "submission": {"number": number, "path": f"submissions/{number:03d}_x.py",
                                             "sha256": "ab" * 32},
            "mode": mode, "device": {"name": device, "arch": "sm_90", "backend": "cuda"},
            "status": "pass", "results": [], "finished": finished}


def test_append_then_read_keeps_order(tmp_path):
    path = tmp_path / "results" / "ledger.jsonl"
    ledger.append(_record(1, "2026-11-29T10:00:00"), path)
    ledger.append(_record(2, "2026-11-29T11:00:00"), path)
    records = ledger.read(path)
    assert [r["submission"]["number"] for r in records] == [1, 2]
    assert path.read_bytes().count(b"\n") == 2


def test_ledger_path_follows_the_environment(tmp_path, monkeypatch, results_dir):
    assert paths.ledger_file() == results_dir / "ledger.jsonl"
    monkeypatch.setenv(paths.LEDGER_ENV, str(tmp_path / "other.jsonl"))
    assert paths.ledger_file() == tmp_path / "other.jsonl"
    assert paths.ledger_file(tmp_path / "given.jsonl") == tmp_path / "given.jsonl"
    ledger.append(_record(5, "2026-11-29T10:00:00"))
    assert ledger.read()[0]["submission"]["number"] == 5


def test_missing_ledger_reads_as_empty(tmp_path):
    assert ledger.read(tmp_path / "none.jsonl") == []


def test_torn_line_is_skipped_with_a_warning_and_the_next_append_starts_a_new_line(tmp_path):
    path = tmp_path / "ledger.jsonl"
    ledger.append(_record(1, "2026-11-29T10:00:00"), path)
    with open(path, "ab") as f:  # a writer killed mid-record
        f.write(b'{"schema": 1, "submission": {"numb')
    with pytest.warns(ledger.TornLineWarning, match=r"ledger.jsonl:2"):
        assert [r["submission"]["number"] for r in ledger.read(path)] == [1]

    ledger.append(_record(2, "2026-11-29T11:00:00"), path)
    lines = path.read_bytes().splitlines()
    assert len(lines) == 3 and lines[1] == b'{"schema": 1, "submission": {"numb'
    assert json.loads(lines[2])["submission"]["number"] == 2
    with pytest.warns(ledger.TornLineWarning):
        assert [r["submission"]["number"] for r in ledger.read(path)] == [1, 2]


def test_latest_by_keeps_the_last_finished_record_of_each_key():
    found = records_module.usable([
        _record(1, "2026-11-29T10:00:00"), _record(1, "2026-11-29T12:00:00", mode="test"),
        _record(1, "2026-11-29T11:00:00"), _record(2, "2026-11-29T13:00:00"),
        _record(1, "2026-11-29T14:00:00", device="MI355X (remote)", source="remote")])
    latest = records_module.latest_by(found, lambda r: (records_module.identity(r), r["mode"], r["source"]))
    assert latest[(1, "benchmark", "local")]["finished"] == "2026-11-29T11:00:00"
    assert latest[(1, "test", "local")]["finished"] == "2026-11-29T12:00:00"
    assert latest[(1, "benchmark", "remote")]["finished"] == "2026-11-29T14:00:00"
    assert latest[(2, "benchmark", "local")]["submission"]["number"] == 2
    assert len(latest) == 4
    by_group = records_module.latest_by(found, records_module.group_key)
    assert by_group[("NVIDIA H200", "benchmark", "?", None)]["submission"]["number"] == 2


def test_two_writers_at_once_leave_every_record_whole(tmp_path):
    path = tmp_path / "ledger.jsonl"
    writer = ("import sys; from harness.results import ledger\n"
              "for i in range(40):\n"
              "    ledger.append({'writer': sys.argv[1], 'i': i, 'pad': 'x' * 5000}, sys.argv[2])\n")
    procs = [subprocess.Popen([sys.executable, "-c", writer, name, str(path)]) for name in ("a", "b")]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    records = ledger.read(path)
    assert len(records) == 80
    for name in ("a", "b"):
        assert [r["i"] for r in records if r["writer"] == name] == list(range(40))


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_full_disk_is_named_as_such(tmp_path):
    cases = tmp_path / "one.txt"
    cases.write_text("batchsize: 1; qseqlen: 1; kvseqlen: 64; seed: 11\n")
    done = helpers.harness("run", helpers.SAMPLES / "reference_call.py", "--device", "cpu", "--cases", cases,
                   env={paths.LEDGER_ENV: "/dev/full"})
    assert done.returncode == exits.EXIT_USAGE, done.stdout + done.stderr
    assert "permissions" not in done.stderr
    assert "no space left on the device" in done.stderr and "/dev/full" in done.stderr, done.stderr


def test_the_ledger_names_why_a_write_failed():
    import errno

    assert "no space left" in ledger.why_unwritten(OSError(errno.ENOSPC, "No space left on device"))
    assert "permission" in ledger.why_unwritten(PermissionError(errno.EACCES, "Permission denied"))
    assert "read-only" in ledger.why_unwritten(OSError(errno.EROFS, "Read-only file system"))
    assert "Is a directory" in ledger.why_unwritten(IsADirectoryError(errno.EISDIR, "Is a directory"))
