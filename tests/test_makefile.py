"""The Makefile's own targets: what they print and the exit code a user sees (make's is 2 for any failed step)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

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
