"""run --gpus and --cluster on the CPU: fake GPU lists (HARNESS_FAKE_GPUS) and a local Ray cluster with
declared GPUs stand in for real GPUs; the scheduling, the pinning, the records and the ledger are real."""
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import cli
from harness.results import ledger
from harness.results import records
from harness.run import cluster
from harness.run import session
from harness.run import spread
from harness import submission as subs

SAMPLES = Path(__file__).resolve().parent / "samples"
SLEEPER = '''#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test file: sleeps long enough to be killed while it runs (then it exits on its own).
import time


def custom_kernel(data):
    time.sleep(25)
    raise RuntimeError("should have been killed")
'''


@pytest.fixture
def settings(tmp_path):
    cases_file = tmp_path / "one.txt"
    cases_file.write_text("batchsize: 1; qseqlen: 1; kvseqlen: 64; seed: 11\n")
    return session.settle(device="cpu", mode="test", cases_arg=str(cases_file), flush="fast", timeout_s=None)


@pytest.fixture
def sleeper(tmp_path):
    path = tmp_path / "sleeper.py"
    path.write_text(SLEEPER)
    return subs.resolve(str(path))


class Seen(spread.Watcher):
    """What the spread reported: starts and finishes per GPU (monotonic times), and the pinning each saw."""

    def __init__(self, kill_label=None):
        self.spans, self.pinning, self.kill_label = [], {}, kill_label

    def started(self, gpu, submission, pid, pinning):
        self.spans.append([gpu.index, submission.label, time.monotonic(), None])
        self.pinning[submission.label] = (gpu.index, pinning)
        if submission.label == self.kill_label:
            threading.Timer(3, os.kill, (pid, signal.SIGKILL)).start()

    def finished(self, gpu, outcome):
        span = next(s for s in self.spans if s[1] == outcome.run.submission.label and s[3] is None)
        span[3] = time.monotonic()


def no_overlap(spans) -> bool:
    """No two runs on one GPU at once."""
    for gpu in {span[0] for span in spans}:
        ordered = sorted((s for s in spans if s[0] == gpu), key=lambda s: s[2])
        if any(later[2] < earlier[3] for earlier, later in zip(ordered, ordered[1:])):
            return False
    return True


def test_listing_and_choosing_gpus(monkeypatch):
    listed = spread.parse_listing("0, GPU-aaa\n1, GPU-bbb\n")
    assert listed == [spread.Gpu("0", "GPU-aaa"), spread.Gpu("1", "GPU-bbb")]
    assert spread.parse_listing("device,Unique ID\ncard3,0x18f6\n") == [spread.Gpu("3", "0x18f6")]
    monkeypatch.setenv(spread.FAKE_ENV, "4")
    found = spread.visible_gpus()
    assert [g.index for g in found] == ["0", "1", "2", "3"] and "the CPU" in found[0].uuid
    assert [g.index for g in spread.choose("all", found)] == ["0", "1", "2", "3"]
    assert [g.index for g in spread.choose("2", found)] == ["0", "1"]
    assert [g.index for g in spread.choose("3,1", found)] == ["3", "1"]
    for wrong in ("5", "0,7", "x"):
        with pytest.raises(spread.SpreadError):
            spread.choose(wrong, found)
    assert spread.Gpu("2", "u").record() == {"index": 2, "uuid": "u"}


def test_older_records_read_without_a_gpu():
    raw = {"mode": "test", "status": "pass", "device": {"backend": "cpu"},
           "submission": {"path": "x.py", "requirements": ["torch"]}}
    read = [records.checked(r) for r in (dict(raw, gpu={"index": 1, "uuid": "GPU-b"}), raw)]
    assert [r["gpu"] for r in read] == [{"index": 1, "uuid": "GPU-b"}, None]


@pytest.mark.slow
def test_spread_pins_each_gpu_keeps_verdicts_and_a_killed_slot_fails_only_its_file(settings, sleeper,
                                                                                   monkeypatch):
    monkeypatch.setenv(spread.FAKE_ENV, "2")
    chosen = [subs.resolve(str(SAMPLES / "reference_call.py")), sleeper,
              subs.resolve(str(SAMPLES / "wrong_output.py"))]
    seen = Seen(kill_label="sleeper")
    outcomes = spread.spread(chosen, settings, spread.visible_gpus(), seen)
    assert [o.run.status for o in outcomes] == ["pass", "error", "fail"]
    assert "died (exit code -9)" in outcomes[1].run.reason
    assert no_overlap(seen.spans) and {s[0] for s in seen.spans} == {"0", "1"}
    for label, (index, pinning) in seen.pinning.items():
        assert pinning == {"CUDA_VISIBLE_DEVICES": index, "HIP_VISIBLE_DEVICES": index}, label
    written = records.usable(ledger.read())
    assert sorted(r["status"] for r in written) == ["error", "fail", "pass"]
    for outcome in outcomes:
        gpu = seen.pinning[outcome.run.submission.label][0]
        assert outcome.record["gpu"]["index"] == int(gpu)
    serial = session.evaluate_and_record(chosen[2], settings)  # reference_call's serial pass: test_cli.py
    assert serial.run.status == "fail" and serial.run.reason == outcomes[2].run.reason
    assert serial.record.get("gpu") is None


def test_cli_refuses_gpus_it_does_not_have_and_cluster_without_ray(settings, monkeypatch):
    monkeypatch.setenv(spread.FAKE_ENV, "2")
    runner = CliRunner()
    done = runner.invoke(cli.main, ["run", str(SAMPLES / "reference_call.py"), "--device", "cpu",
                                    "--cases", settings.cases_name, "--gpus", "5"])
    assert done.exit_code == 2 and "--gpus 5: this machine has 2 GPU(s)" in done.output
    monkeypatch.setitem(sys.modules, "ray", None)  # as where the extra is not installed
    done = runner.invoke(cli.main, ["run", str(SAMPLES / "reference_call.py"), "--device", "cpu",
                                    "--cases", settings.cases_name, "--cluster", "auto"])
    assert done.exit_code == 2 and done.output.strip().splitlines()[-1] == f"error: {cluster.NO_RAY}"


@pytest.mark.slow  # 25-27 s on the loaded 2-core machine (2026-12-04)
def test_ray_tasks_run_the_sent_bytes_and_a_killed_task_fails_only_its_file(settings, sleeper):
    import ray

    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False)
    try:
        def kill_sleeper(submission, ref):
            if submission.label == "sleeper":
                threading.Timer(3, ray.cancel, (ref,), {"force": True}).start()

        chosen = [subs.resolve(str(SAMPLES / "reference_call.py")), sleeper]
        outcomes = cluster.spread_on_cluster(chosen, settings, "local", on_queued=kill_sleeper)
    finally:
        ray.shutdown()
    assert [o.run.status for o in outcomes] == ["pass", "error"]
    assert "its Ray task was lost" in outcomes[1].run.reason
    passed = outcomes[0].record
    assert passed["submission"]["path"].endswith("tests/samples/reference_call.py")
    assert passed["submission"]["sha256"] == chosen[0].sha256 and passed["gpu"]["index"] in (0, 1)
    assert len(ledger.read()) == 2


def test_piped_rows_print_one_line_per_case_and_file_prefixed_with_the_gpu(settings, sleeper):
    import io

    from rich.console import Console

    from harness import display
    from harness.run import protocol
    from harness.run import spread_rows

    printed = io.StringIO()
    gpus = [spread.Gpu("0", "a"), spread.Gpu("3", "b")]
    with spread_rows.GpuRows(Console(file=printed, width=200), gpus, display.case_line) as rows:
        rows.started(gpus[1], sleeper, 1, {})
        case = protocol.CaseResult(spec=dict(settings.specs[0]), status="error", message="boom")
        rows.case(gpus[1], sleeper, 0, 1, case)
        run = spread.lost_run(sleeper, settings, "its worker process died", "")
        rows.finished(gpus[1], session.Outcome(run, {}, None))
    assert printed.getvalue().splitlines() == [
        "gpu 3 | sleeper: started", "gpu 3 | sleeper: case 1/1 1×64 s11: error: boom",
        "gpu 3 | sleeper: error: its worker process died"]
