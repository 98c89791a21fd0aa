"""README's "The main job" examples run on a fresh clone, on the CPU, with the exit codes a user should see.

The clone is a copy of every file git tracks or would track (what a clone of this commit holds, the tracked
ledger with its GPU results included); the commands run there with their results in the copy's results/.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXPECTED_EXIT = {  # what each example must end with on a CPU-only machine
    "make run": 0,                                   # skips HIP files with the reason, aiter ones on the stand-in
    "harness run 120": 0,                            # HIP: skipped with the reason
    "harness run --all --mode test": 0,
    "harness run 200 --mode leaderboard --flush fast": 0,
    "harness diff 119 200": 0,                       # the tracked ledger's H200 results; the CPU ones are left out
    "make submit N=120 DRY_RUN=1": 0,                # the gate's verdict and the command, nothing sent
}


def main_job_examples() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## The main job\n+```bash\n(.*?)```", text, re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]


def fresh_clone(target: Path) -> Path:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def test_the_readme_examples_are_the_ones_checked():
    assert sorted(main_job_examples()) == sorted(EXPECTED_EXIT)


def test_the_readme_examples_run_on_a_fresh_clone(tmp_path, monkeypatch):
    clone = fresh_clone(tmp_path / "clone")
    monkeypatch.delenv("HARNESS_RESULTS")  # the clone's own results/, as a user's would be
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PYTHONPATH": str(clone), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "HOME": str(tmp_path / "home")}
    (clone / ".venv").symlink_to(bin_dir.parent)  # the set-up venv; `-o` below keeps make from re-installing it
    outputs = {}
    for command in main_job_examples():
        words = command.split()
        if words[0] == "make":
            words = ["make", "-s", "-o", ".venv/.installed", *words[1:]]
        done = subprocess.run(words, cwd=clone, env=env, capture_output=True, text=True, timeout=1800)
        outputs[command] = done.stdout + done.stderr
        assert done.returncode == EXPECTED_EXIT[command], f"{command}:\n{outputs[command][-3000:]}"
    assert "compared on NVIDIA H200" in outputs["harness diff 119 200"]
    assert "Triton interpreter" in outputs["make run"]  # it says what it did not time
    assert "gate verdict" in outputs["make submit N=120 DRY_RUN=1"]
    assert "nothing sent" in outputs["make submit N=120 DRY_RUN=1"]
