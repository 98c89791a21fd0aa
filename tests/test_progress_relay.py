"""The gfx950 emulator's progress lines reach the parent's output, not only the worker log.

The child (harness/run/child.py) sends each line over its private pipe; the parent's Worker passes
it to on_progress, and `harness run` prints it where the heartbeat and HIP build lines go."""
import io
import json

import pytest

from harness import platform as platforms
from harness.emulator import progress
from harness.run import protocol, worker
from harness import submission as subs

TINY = {"batchsize": 1, "qseqlen": 1, "kvseqlen": 32, "seed": 5}

# A fake long emulated launch: three workgroups through the emulator's own Progress, then the reference.
# It reaches the emulator's module through sys.modules: the lint refuses a submission that imports the harness.
FAKE_LAUNCH = '''
import sys

from reference import ref_kernel

Progress = sys.modules["harness.emulator.progress"].Progress  # the child's own, as a launch uses it


class Group:
    executed = 1000


def custom_kernel(data):
    launch = Progress("fake_kernel", 3, "fake path")
    for _ in range(3):
        launch.finished(Group())
    return ref_kernel(data)
'''


class Group:
    executed = 64


def test_progress_speaks_only_for_long_launches_and_relays_each_line(monkeypatch):
    heard, stream = [], io.StringIO()
    progress.relay_to(heard.append)
    try:
        quiet = progress.Progress("k", 3, "p", stream=stream)  # default QUIET_S: a quick launch says nothing
        for _ in range(3):
            quiet.finished(Group())
        assert stream.getvalue() == "" and heard == []
        monkeypatch.setenv(progress.QUIET_ENV, "0")
        monkeypatch.setenv(progress.EVERY_ENV, "0")
        told = progress.Progress("k", 3, "p", stream=stream)
        for _ in range(3):
            told.finished(Group())
    finally:
        progress.relay_to(None)
    assert heard and heard[-1].startswith("gfx950 emulated (CPU): k: 3/3 workgroups, 192 wave instructions")
    assert stream.getvalue().splitlines() == heard


@pytest.fixture
def fake_launch(tmp_path, monkeypatch):
    monkeypatch.setenv(progress.QUIET_ENV, "0")  # the child inherits them: a line per workgroup
    monkeypatch.setenv(progress.EVERY_ENV, "0")
    path = tmp_path / "fake_launch.py"
    path.write_text(FAKE_LAUNCH)
    return path


def test_a_child_progress_line_reaches_the_parents_say(fake_launch, tmp_path):
    said = []
    run = protocol.evaluate(subs.from_path(fake_launch), platforms.detect("cpu"), "test", [TINY],
                            cases_name="test", flush="fast", timeout_s=120.0, log_dir=tmp_path, say=said.append)
    assert run.status == "pass", run.reason
    assert said[-1].startswith("fake_launch: gfx950 emulated (CPU): fake_kernel: 3/3 workgroups, "
                               "3,000 wave instructions")
    assert "fake path" in said[-1]
    assert "3/3 workgroups" in run.log_path.read_text()  # the worker log keeps them too


def test_only_progress_lines_of_the_request_under_way_are_relayed(tmp_path):
    said = []
    with worker.Worker(tmp_path / "none.py", "cpu", tmp_path / "log", on_progress=said.append) as w:
        forged = json.dumps({"progress": "gfx950 emulated (CPU): fake", "nonce": "0" * 32}).encode()
        assert not w._relayed(forged, "1" * 32)
        assert w._relayed(forged.replace(b"0" * 32, b"1" * 32), "1" * 32)
        assert not w._relayed(json.dumps({"ok": True, "progress": "x", "nonce": "1" * 32}).encode(), "1" * 32)
    assert said == ["gfx950 emulated (CPU): fake"]
