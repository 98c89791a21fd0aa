"""Shared by the kernel tests: import a submission file in this process, or run a check script under the
Triton interpreter in a child process (Triton picks the interpreter at its first import, so a process that
may have imported Triton already cannot switch)."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def load_file(path: Path, name: str):
    """A fresh import of the file under a module name of its own."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_interpreted(script: Path, timeout: float) -> dict:
    """The JSON the check script prints last, run with TRITON_INTERPRET=1; fails the test on a non-zero exit."""
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=dict(os.environ, TRITON_INTERPRET="1"), cwd=REPO, timeout=timeout)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])
