"""What many test files share: where the checkout is, the CLI in this process or in a child process, and a
fresh copy of the repository. One module, so a change of how the CLI is run reaches every test."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "tests" / "samples"
# The CLI as a script runs it; conftest pins PYTHONPATH to this checkout, so the child imports this harness.
HARNESS = [sys.executable, "-c", "from harness.cli import main; main()"]
TERMINAL_80 = {"FORCE_COLOR": "1", "NO_COLOR": "1", "COLUMNS": "80", "TERM": "xterm"}


def invoke(*args, env=None):
    """The CLI in this process (click's runner): fast, for what needs no pipes."""
    from harness import cli

    return CliRunner(env=env).invoke(cli.main, [str(a) for a in args])


def harness(*args, env=None, cwd=REPO, timeout=600):
    """The real command in a child process with pipes, as a script or CI sees it."""
    return subprocess.run(HARNESS + [str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def plain(text: str) -> str:
    """The text without its terminal escapes."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def listed_files(root: Path = REPO) -> list[str]:
    """Every file git tracks or would track: what a clone of this commit holds."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            capture_output=True, check=True).stdout.decode().split("\0")
    return [name for name in listed if name and (root / name).is_file()]


def copy_of_repository(target: Path, commit: bool = False) -> Path:
    """A fresh git checkout of what a clone would hold (committed when asked: some readers want a HEAD)."""
    for name in listed_files():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target / name)
    steps = [["init", "-q"], ["add", "-A"]]
    if commit:
        steps.append(["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "copy"])
    for step in steps:
        subprocess.run(["git", *step], cwd=target, check=True, capture_output=True)
    return target
