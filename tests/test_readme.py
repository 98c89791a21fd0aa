"""Every command of every README in the repository runs on a fresh clone, on the CPU, with the exit code a user
should see; a command that cannot run here says so in the README itself ("needs a GPU", "needs MI355X", "needs
network").

Commands are the lines of the READMEs' ```bash blocks; a concrete `harness ...` / `make ...` written inline in the
prose must also stand in a block of its README, so none escapes. The clone is a copy of every file git tracks or
would track (what a clone of this commit holds, the tracked ledger with its GPU results included); each command is
a test of its own (so xdist spreads them over its workers), run in one clone per worker, with its results in the
copy's results/.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import copy_of_repository

REPO = Path(__file__).resolve().parent.parent
NEEDS = re.compile(r"#.*\bneeds (a GPU|MI355X|network)\b")
# Commands that run a file on the gfx950 emulator on a CPU (minutes each): run by `make test-emulator`.
EMULATES = re.compile(r"#.*\bemulates (HIP|gfx950)\b")
# What each command must end with on a CPU-only machine; the keys are exactly the READMEs' unmarked commands.
EXPECTED_EXIT = {
    "make setup": 0,                                 # idempotent: the set-up venv and the HIP toolchain are there
    "make test": 0,                                  # run with one quick test selected (PYTEST_ADDOPTS below)
    "make test-fast": 0,                             # the same quick test
    "make run": 0,                                   # HIP files emulated, aiter ones on the stand-in
    "harness run 120": 0,                            # HIP on the gfx950 emulator, small cases
    "harness run 013 --cases small": 0,              # harness/emulator/README.md: the speed figures' commands
    "harness run 120 --cases small": 0,
    "harness run 201 --device gfx950 --cases small": 0,
    "harness run --all --mode test": 0,
    "harness run 200 --mode leaderboard --flush fast": 0,
    "harness diff 119 200": 0,                       # the tracked ledger's H200 results; the CPU ones are left out
    "harness run tests/samples/reference_call.py": 0,
    "harness list": 0,
    "harness doctor": 0,
    "make submit N=120 DRY_RUN=1": 0,                # the gate's verdict and the command, nothing sent
    "harness diff 013 014 --source": 0,              # no times of either: the code change alone, said so
    "harness diff 119 120 --source": 0,
    "harness compile 13": 0,
    "harness compile 120": 0,
    "python bench/tools/standin_noise.py cpu small": 0,
    "python bench/tools/isa_201.py --target gfx950": 0,
}
MAX_README_LINES = 150  # the front page: what it is, the commands, the exit codes, where things are
PLACEHOLDER = re.compile(r"[\[\]|~]|\.\.\.|NNN|\s[A-Z]+(?![=\w])")  # N, A B, [..], a|b, ~/..., N=...


def readmes() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split()
    return sorted(REPO / name for name in listed if Path(name).name == "README.md")


def block_commands(text: str) -> list[tuple[str, str | None]]:
    """(command, what it needs or None) for every line of the text's ```bash blocks, in order; "emulator" for a
    command that runs here, in minutes, through the gfx950 emulator."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if line.split("#")[0].strip():
                needs = NEEDS.search(line)
                what = needs.group(1) if needs else "emulator" if EMULATES.search(line) else None
                found.append((line.split("#")[0].strip(), what))
    return found


def inline_commands(text: str) -> list[str]:
    """Concrete `harness X ARG...` / `make X ARG...` written in the prose (a bare `harness run` names the command;
    templates with N, [..], | are left out)."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    return [c for c in re.findall(r"`((?:harness|make) [^`\s]+ [^`]+)`", prose) if not PLACEHOLDER.search(" " + c)]


def test_every_readme_command_is_checked_or_marked():
    unmarked = []
    for readme in readmes():
        text = readme.read_text(encoding="utf-8")
        blocks = block_commands(text)
        in_blocks = {command for command, _ in blocks}
        assert not [c for c in inline_commands(text) if c not in in_blocks], \
            f"{readme.relative_to(REPO)}: commands in the prose that no block runs or marks"
        unmarked += [command for command, needs in blocks if needs in (None, "emulator")]
    assert sorted(unmarked) == sorted(EXPECTED_EXIT)
    assert {path.relative_to(REPO).as_posix() for path in readmes()} >= {"README.md", "submissions/README.md"}


def test_the_front_page_is_short():
    lines = len((REPO / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; the reference belongs in docs/"


# What a command's output must say, beyond its exit code.
OUTPUT_HAS = {
    "harness diff 119 200": ["compared on NVIDIA H200"],
    "make run": ["Triton interpreter"],  # it says what it did not time
    "make submit N=120 DRY_RUN=1": ["gate verdict", "nothing sent"],
    "harness diff 013 014 --source": ["no times to compare", "+++ submissions/"],
    "harness diff 119 120 --source": ["no times to compare", "+++ submissions/"],
    "make test": ["1 passed"],
    "make test-fast": ["1 passed"],
    "harness compile 120": ["v_mfma_f32_16x16x128_f8f6f4"],
}
RUN_HERE = [pytest.param(command, marks=[pytest.mark.emulator_e2e] if needs == "emulator" else [])
            for readme in readmes() for command, needs in block_commands(readme.read_text(encoding="utf-8"))
            if needs in (None, "emulator")]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """One copy of every file git tracks or would track, shared by the commands (each xdist worker makes its own),
    with the set-up venv linked in; the environment a user of that clone would have."""
    root = tmp_path_factory.mktemp("readme")
    copy = copy_of_repository(root / "clone")
    bin_dir = Path(sys.executable).parent
    (copy / ".venv").symlink_to(bin_dir.parent)  # the set-up venv; `-o` below keeps make from re-installing it
    env = {**os.environ, "PYTHONPATH": str(copy), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "HOME": str(root / "home"), "PYTEST_ADDOPTS": "-k test_every_readme_command_is_checked_or_marked"}
    env.pop("HARNESS_RESULTS", None)  # the clone's own results/, as a user's would be
    return copy, env


@pytest.mark.slow
@pytest.mark.parametrize("command", RUN_HERE)
def test_a_readme_command_runs_on_a_fresh_clone(clone, command):
    copy, env = clone
    words = command.split()
    if words[0] == "make":
        words = ["make", "-s", "-o", ".venv/.installed", *words[1:]]
    done = subprocess.run(words, cwd=copy, env=env, capture_output=True, text=True, timeout=1800)
    shown = done.stdout + done.stderr
    assert done.returncode == EXPECTED_EXIT[command], f"{command}:\n{shown[-3000:]}"
    for words in OUTPUT_HAS.get(command, []):
        assert words in shown, f"{command}: no {words!r} in\n{shown[-3000:]}"
