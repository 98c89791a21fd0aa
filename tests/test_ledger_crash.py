"""The ledger survives a harness killed with SIGKILL mid-run, and two harness runs writing at once."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.results import ledger

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "samples" / "bad"
ONE_CASE = "- {batchsize: 1, qseqlen: 1, kvseqlen: 64, seed: 11}\n"


def harness_command(*args):
    return [sys.executable, "-c", "from harness.cli import main; main()", *args]


def environment(ledger_path):
    return {**os.environ, "HARNESS_LEDGER": str(ledger_path), "MLA_DEVICE": "cpu"}


def wait_for(condition, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def process_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1].split()[0] != "Z"  # a zombie is as good as gone
    except FileNotFoundError:
        return False


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().split(") ")[-1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def test_kill_9_mid_run_keeps_written_records_and_the_next_run_appends(tmp_path):
    path = tmp_path / "ledger.jsonl"
    cases = tmp_path / "one.yml"
    cases.write_text(ONE_CASE)
    # First a quick failing file (one record), then one that hangs: the kill lands while it runs.
    run = subprocess.Popen(
        harness_command("run", str(CORPUS / "wrong_shape.py"), str(CORPUS / "hangs.py"), "--device", "cpu",
                        "--cases", str(cases), "--timeout", "300", "--json"),
        env=environment(path), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(ledger.read(path)) == 1, 120, "the first record")
        wait_for(lambda: children_of(run.pid), 60, "the second submission's worker")
        workers = children_of(run.pid)
        time.sleep(1.0)  # the worker is now spinning in custom_kernel
        os.kill(run.pid, signal.SIGKILL)
        assert run.wait(timeout=30) == -signal.SIGKILL
    finally:
        if run.poll() is None:
            run.kill()
    try:
        # The orphaned worker must not spin on forever: it dies with its parent.
        wait_for(lambda: not any(process_alive(pid) for pid in workers), 30, "the orphaned worker to exit")
    finally:
        for pid in workers:
            if process_alive(pid):
                os.kill(pid, signal.SIGKILL)

    first = ledger.read(path)
    assert [r["status"] for r in first] == ["fail"]
    assert path.read_bytes().endswith(b"\n")

    again = subprocess.run(harness_command("run", str(CORPUS / "returns_input.py"), "--device", "cpu",
                                           "--cases", str(cases), "--json"),
                           env=environment(path), cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert again.returncode == 1, again.stderr
    records = ledger.read(path)
    assert len(records) == 2 and records[0] == first[0]
    assert records[1]["submission"]["path"].endswith("returns_input.py")
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_kill_9_during_a_write_leaves_a_torn_line_that_the_next_run_steps_over(tmp_path):
    path = tmp_path / "ledger.jsonl"
    ledger.append({"run_id": "whole", "status": "pass"}, path)
    # What a writer killed inside os.write leaves: half a record, no newline.
    with open(path, "ab") as f:
        f.write(b'{"run_id": "torn", "status": "pa')
    writer = subprocess.run([sys.executable, "-c", "import sys; from harness.results import ledger; "
                             "ledger.append({'run_id': 'after', 'status': 'fail'}, sys.argv[1])", str(path)],
                            cwd=REPO, capture_output=True, text=True, timeout=60)
    assert writer.returncode == 0, writer.stderr
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = ledger.read(path)
    assert [r["run_id"] for r in records] == ["whole", "after"]
    assert any(issubclass(w.category, ledger.TornLineWarning) for w in caught)


@pytest.mark.slow
def test_two_harness_runs_at_once_and_heavy_concurrent_appends(tmp_path):
    path = tmp_path / "ledger.jsonl"
    cases = tmp_path / "one.yml"
    cases.write_text(ONE_CASE)
    files = {"a": ["wrong_shape.py", "returns_input.py"], "b": ["wrong_device.py", "nan_everywhere.py"]}
    runs = [subprocess.Popen(harness_command("run", *[str(CORPUS / f) for f in names], "--device", "cpu",
                                             "--cases", str(cases), "--json"),
                             env=environment(path), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for names in files.values()]
    # Meanwhile two writers append large records (well past PIPE_BUF and a page) as fast as they can.
    appender = ("import sys; from harness.results import ledger\n"
                "for i in range(150):\n"
                "    ledger.append({'writer': sys.argv[1], 'i': i, 'pad': 'y' * 70000}, sys.argv[2])\n")
    writers = [subprocess.Popen([sys.executable, "-c", appender, name, str(path)], cwd=REPO) for name in ("w1", "w2")]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    outputs = [r.communicate(timeout=300) for r in runs]
    assert [r.returncode for r in runs] == [1, 1], [err for _, err in outputs]

    lines = path.read_bytes().splitlines()
    records = [json.loads(line) for line in lines]  # every line parses: nothing interleaved or torn
    assert len(records) == 300 + 4
    for name in ("w1", "w2"):
        assert [r["i"] for r in records if r.get("writer") == name] == list(range(150))
    runs_written = sorted(Path(r["submission"]["path"]).name for r in records if "submission" in r)
    assert runs_written == sorted(files["a"] + files["b"])
    assert all(r["status"] == "fail" for r in records if "submission" in r)
