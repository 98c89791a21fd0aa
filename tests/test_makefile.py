"""The Makefile's own targets: what they print and the exit code a user sees (make's is 2 for any failed step);
what keeps `make test` and `make test-fast` short (tests/suite_time.py)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import suite_time
from helpers import REPO

VENV = Path(sys.executable).parent.parent  # the venv running these tests, whatever the checkout's .venv is


def make(*args, env=None):
    command = ["make", "-s", "-o", str(VENV / ".installed"), f"VENV={VENV}", *args]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def test_test_gpu_without_a_gpu_says_so_in_one_line_and_exits_2():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: make test-gpu runs the gpu tests here")
    done = make("test-gpu")
    assert done.returncode == 2
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1 and "no GPU on this machine" in lines[0], lines


@pytest.mark.parametrize("target", ["lint", "submit"])
def test_make_names_the_harness_exit_code_it_cannot_return(tmp_path, target):
    rejected = tmp_path / "rejected.py"
    rejected.write_text("#!POPCORN leaderboard amd-mixed-mla\n#!POPCORN gpu MI355X\nimport torch\n# a cuda "
                        + "stream\ndef custom_kernel(data):\n    return data\n")
    done = make(target, f"N={rejected}", "DRY_RUN=1")
    assert done.returncode == 2  # make's own code for a failed step
    assert "harness exited with 1" in done.stderr, done.stdout + done.stderr  # the gate's or lint's own code


def test_every_test_the_durations_file_times_over_10_s_is_marked_slow(request):
    """make test-fast leaves out the slow tests: a test tests/durations.json times over SLOW_S must carry the
    mark. Checked over what this session collected (before -m or -k): the whole suite under make."""
    seconds = suite_time.load()
    assert seconds, f"{suite_time.DURATIONS_FILE} names no test"
    slow = request.config.stash[suite_time.SLOW_MARKS]
    unmarked = sorted(nodeid for nodeid, s in seconds.items() if s > suite_time.SLOW_S and slow.get(nodeid) is False)
    where = f"over {suite_time.SLOW_S:g} s in {suite_time.DURATIONS_FILE.name}"
    assert not unmarked, f"{where}, not marked slow: {unmarked}"


class _Item:
    """What suite_time reads of a collected test: its id and its xdist_group mark."""

    def __init__(self, nodeid: str, group: str | None = None):
        self.nodeid = nodeid
        self.mark = pytest.mark.xdist_group(group).mark if group else None

    def get_closest_marker(self, name):
        return self.mark if name == "xdist_group" else None


def test_xdist_gets_the_longest_work_first_and_a_module_stays_together():
    items = [_Item("a.py::quick"), _Item("a.py::long"), _Item("b.py::one@g", "g"), _Item("c.py::x"),
             _Item("b.py::two@g", "g")]
    seconds = {"a.py::quick": 1, "a.py::long": 30, "b.py::one": 20, "b.py::two": 25, "c.py::x": 40}
    order = [item.nodeid for item in suite_time.longest_first(items, seconds)]
    # the group (45 s) first, in file order; then c (40 s); then a (31 s), its long test first
    assert order == ["b.py::one@g", "b.py::two@g", "c.py::x", "a.py::long", "a.py::quick"]
    assert suite_time.plain_id("t.py::f[x@y]") == "t.py::f[x@y]" and suite_time.plain_id("t.py::f[1]@g") == "t.py::f[1]"


def test_the_summary_names_tests_over_10_s_without_the_slow_mark():
    measured = {"t.py::long": 12.0, "t.py::marked": 50.0, "t.py::short": 9.9}
    assert suite_time.unmarked_slow(measured, {"t.py::marked"}) == [("t.py::long", 12.0)]
