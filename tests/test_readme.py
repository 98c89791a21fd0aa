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

from helpers import HARNESS, copy_of_repository

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


# What each command's output must show beyond its exit code (a skip exits 0 too): every pattern is found, with
# the output's line wraps undone. Each run's progress lines ("case 3/3 2×4500 s13: pass") show it ran to the end.
EXPECTED_OUTPUT = {
    "make setup": [r"\[hip toolchain\] ready in ", r"sandbox: "],
    "make test": ["1 passed"],
    "make test-fast": ["1 passed"],
    "make run": ["Triton interpreter", r"case 3/3 \S+ s13: pass"],  # it says what it did not time
    "harness run 120": [r"120_hip_fp8_mfma · test · gfx950 emulated \(CPU\): correctness only",
                        r"case 3/3 \S+ s13: pass"],
    "harness run 013 --cases small": [r"013_hip_mxfp4_fused · test · .{0,60}gfx950 emulated",
                                      r"case 3/3 \S+ s13: pass"],
    "harness run 120 --cases small": [r"120_hip_fp8_mfma · test · gfx950 emulated \(CPU\): correctness only",
                                      r"case 3/3 \S+ s13: pass"],
    "harness run 201 --device gfx950 --cases small": [r"201_triton_fp8kv · test · gfx950 emulated",
                                                      r"case 3/3 \S+ s13: pass"],
    "harness run --all --mode test": [r"201_triton_fp8kv: case 3/3 \S+ s13: pass"],
    "harness run 200 --mode leaderboard --flush fast": [r"200_triton_mxfp4 · leaderboard · cpu",
                                                        r"case 3/3 \S+ s13: pass", "through the Triton interpreter"],
    "harness diff 119 200": ["compared on NVIDIA H200"],
    "harness run tests/samples/reference_call.py": [r"reference_call · test · cpu", r"case 3/3 \S+ s13: pass"],
    "harness list": [r"120_hip_fp8_mfma\.py: needs hip, torch; runs here: yes; gfx950 emulated \(CPU\)",
                     r"201_triton_fp8kv\.py: needs torch, triton; runs here: yes"],
    "harness doctor": [r"gfx950 emulator\W+on: gfx950 emulated", r"(\d+) of \1 submissions in submissions/ can run"],
    # After the gate ran 120's small cases on the emulator: its local test run passed, emulated.
    "make submit N=120 DRY_RUN=1": [r"gate local test run: ok", r"gfx950 emulated \(CPU\): correctness only",
                                    "gate verdict: passed", "nothing sent"],
    "harness diff 013 014 --source": ["no times to compare", r"\+\+\+ submissions/"],
    "harness diff 119 120 --source": ["no times to compare", r"\+\+\+ submissions/"],
    "harness compile 13": [r"013_hip_mxfp4_fused\.py for gfx950: ok compiles for gfx950: 2 kernel\(s\), no spills"],
    "harness compile 120": [r"120_hip_fp8_mfma\.py for gfx950: ok compiles", "v_mfma_f32_16x16x128_f8f6f4"],
    "python bench/tools/standin_noise.py cpu small": [r"2x4500 s13 +pass",
                                                      r"worst: [\d.]+ x the reference's own noise \(limit 1.5\)"],
    "python bench/tools/isa_201.py --target gfx950": [r"default: regs \d+v\+\d+a spills 0/0 "],
}
# The commands that promise emulation ("emulates HIP/gfx950") and the files whose kernels must have run on the
# emulator: the run's note counts their launches ("120_hip_fp8_mfma: 5 launches of 2 kernels, ...").
EMULATED = {
    "make run": ("013_hip_mxfp4_fused", "120_hip_fp8_mfma"),
    "harness run 120": ("120_hip_fp8_mfma",),
    "harness run --all --mode test": ("013_hip_mxfp4_fused", "120_hip_fp8_mfma"),
    "harness run 013 --cases small": ("013_hip_mxfp4_fused",),
    "harness run 120 --cases small": ("120_hip_fp8_mfma",),
    "harness run 201 --device gfx950 --cases small": ("201_triton_fp8kv",),
    "make submit N=120 DRY_RUN=1": (),  # the gate's own verdict names the emulator (EXPECTED_OUTPUT)
}
# Never in an emulating command's output: a file skipped, HIP sent away for want of ROCm, an instruction lacked.
NOT_EMULATED = (r"(?m)^skip ", r"needs ROCm", r"not emulated: \w")
NEVER_SHOWN = {"python bench/tools/isa_201.py --target gfx950": (r"compile error",)}


def output_problems(command: str, shown: str) -> list[str]:
    """What the command's output lacks, or says and must not (empty when it shows what the README promises)."""
    flat = " ".join(shown.split())
    problems = [f"no {p!r}" for p in EXPECTED_OUTPUT.get(command, []) if not re.search(p, flat)]
    for label in EMULATED.get(command, ()):
        if not re.search(rf"{label}: [1-9][\d,]* launches of \d+ kernels", flat):
            problems.append(f"no launches of {label}'s kernels on the gfx950 emulator")
    never = NOT_EMULATED if command in EMULATED else NEVER_SHOWN.get(command, ())
    return problems + [f"says {p!r}" for p in never if re.search(p, shown)]


def test_every_command_has_an_output_expectation_and_every_emulating_one_shows_the_emulator():
    assert sorted(EXPECTED_OUTPUT) == sorted(EXPECTED_EXIT)
    for pattern in [p for patterns in EXPECTED_OUTPUT.values() for p in patterns] + list(NOT_EMULATED):
        re.compile(pattern)  # a pattern that is no regular expression fails here, not minutes into a clone
    emulating = sorted(c for r in readmes() for c, needs in block_commands(r.read_text(encoding="utf-8"))
                       if needs == "emulator")
    assert emulating == sorted(EMULATED)
    for command in emulating:
        assert EMULATED[command] or any("gfx950 emulated" in p for p in EXPECTED_OUTPUT[command]), command


def test_an_emulating_command_s_check_refuses_a_skipped_hip_run(tmp_path):
    """`harness run 120` exits 0 when it skips 120 as much as when it emulates it: the output check tells them
    apart (here the skip of `--device cpu`, in seconds)."""
    env = {**os.environ, "HARNESS_RESULTS": str(tmp_path)}
    done = subprocess.run(HARNESS + ["run", "120", "--device", "cpu", "--cases", "small"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    shown = done.stdout + done.stderr
    assert done.returncode == 0 and "skip" in shown, shown
    problems = output_problems("harness run 120", shown)
    assert "no launches of 120_hip_fp8_mfma's kernels on the gfx950 emulator" in problems, problems
    assert "says '(?m)^skip '" in problems, problems  # the skip line, whatever reason it gives


# What `make test` / `make test-fast` run in the clone: one quick test, from its own file, so that each xdist
# worker collects one module, not the suite (~11 s of CPU a worker, torch and Triton imported).
QUICK_TEST = "tests/test_readme.py -k test_every_readme_command_is_checked_or_marked"

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
           "HOME": str(root / "home"), "PYTEST_ADDOPTS": QUICK_TEST}
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
    problems = output_problems(command, shown)
    assert not problems, f"{command}: {problems} in\n{shown[-3000:]}"
