"""The HIP samples of tests/samples/hip_emulated/ through the real `harness run --device gfx950`, each against its
expected verdict in that folder's EXPECTED.md (slow: each sample is built for gfx950 and the CPU, then emulated)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness import platform as platforms

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "tests" / "samples" / "hip_emulated"
ROW = re.compile(r"^\| (\w+\.py) \| (\w+) \|([^|]*)\|", re.MULTILINE)


def expected() -> dict:
    return {name: (status, reason.strip()) for name, status, reason in ROW.findall(
        (SAMPLES / "EXPECTED.md").read_text())}


def cases_file(tmp_path: Path) -> Path:
    lines = re.search(r"Cases: `(.*)` and `(.*)`\.", (SAMPLES / "EXPECTED.md").read_text()).groups()
    path = tmp_path / "cases.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_every_sample_has_a_row():
    assert sorted(expected()) == sorted(p.name for p in SAMPLES.glob("*.py"))


@pytest.mark.emulator_e2e
def test_the_samples_get_their_verdicts_on_the_emulator(tmp_path):
    missing = platforms.emulator_missing()
    if missing:
        pytest.fail(f"the gfx950 emulator cannot run here: {missing}")
    rows = expected()
    files = sorted(rows)
    command = [sys.executable, "-c", "from harness.cli import main; main()", "run", *[SAMPLES / f for f in files],
               "--device", "gfx950", "--cases", cases_file(tmp_path), "--json"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=3000,
                          env={**os.environ, "HARNESS_RESULTS": str(tmp_path / "results")})
    printed = json.loads(done.stdout)
    assert len(printed) == len(files), done.stderr[-2000:]
    for name, record in zip(files, printed):
        status, reason = rows[name]
        assert record["status"] == status, (name, record["reason"])
        assert reason in record["reason"], (name, record["reason"])
        assert record["device"]["name"] == platforms.EMULATOR_MARK and record["emulator"] is not None, name
