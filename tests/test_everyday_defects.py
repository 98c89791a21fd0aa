"""Issue 18's everyday defects, each checked through the real command the way the new user met it."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import cli, exits, paths
from harness.results import ledger
from harness.results import records

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "tests" / "samples"
HARNESS = [sys.executable, "-c", "from harness.cli import main; main()"]


def invoke(*args, env=None):
    return CliRunner(env=env).invoke(cli.main, [str(a) for a in args])


def harness(*args, env=None, cwd=REPO):
    """The real command in a child process with pipes, as a script or CI sees it."""
    return subprocess.run(HARNESS + [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


# -- 1. a Python syntax error is a compile failure at the file's line, exit 1 ----------------------------

@pytest.mark.parametrize("body", [
    "import triton\n\ndef broken(:\n    pass\n",
    "from torch.utils.cpp_extension import load_inline\nSOURCE = '__global__ void k() {}'\n\ndef broken(:\n    pass\n",
])
def test_compile_of_a_file_with_a_python_syntax_error_fails_at_its_line(tmp_path, body):
    path = tmp_path / "broken.py"
    path.write_text(body)
    line = body.splitlines().index("def broken(:") + 1
    result = invoke("compile", path)
    assert result.exit_code == exits.EXIT_FAILED, result.output
    assert f"broken.py:{line}:" in result.output and "SyntaxError" in result.output
    assert "internal error" not in result.output
    [record] = ledger.read()
    assert record["mode"] == "compile" and record["status"] == "fail" and f"line {line}" in record["reason"]
