"""One protection for every command that imports or runs a submission: `harness compile`, `harness estimate` and
the submit gate's compile import a file only in its sandboxed worker, as `harness run` does (tests/test_sandbox.py
proves it for run). A Triton sample that appends to reference.py at import fails each command with its reason,
on a copy of the repository that stays clean."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.sandbox import bwrap
from helpers import copy_of_repository
from test_sandbox import HOSTILE, expected_verdicts

# Its module-wide fixtures run once: make test gives the whole file to one xdist worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("protection")

SAMPLE = HOSTILE / "writes_at_compile.py"
KINDS = ["files"] + ([] if bwrap.why_not() else ["sandbox"])


def environment(copy: Path, results: Path) -> dict:
    """The copy on the path, its own results, and an empty HIP cache of its own (another process may rebuild the
    real one meanwhile, which the file checks would rightly report)."""
    (results / "hip-cache").mkdir(parents=True, exist_ok=True)
    return {**os.environ, "PYTHONPATH": str(copy), "HARNESS_RESULTS": str(results), "COLUMNS": "200",
            "HARNESS_ESTIMATE_ROWS": "2048", "HARNESS_HIP_CACHE": str(results / "hip-cache")}


def harness_in(copy: Path, results: Path, *args) -> subprocess.CompletedProcess:
    env = environment(copy, results)
    env.pop("HARNESS_LEDGER", None)
    return subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", *args], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=600)


def clean(copy: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=copy, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    return copy_of_repository(tmp_path_factory.mktemp("repo"), commit=True)


@pytest.mark.parametrize("kind", KINDS)
def test_compile_imports_the_file_only_in_its_worker(copy, tmp_path, kind):
    sample = str(SAMPLE.relative_to(HOSTILE.parents[2]))
    done = harness_in(copy, tmp_path, "compile", sample, "--protection", kind)
    assert done.returncode == 1, done.stdout + done.stderr
    assert expected_verdicts(SAMPLE)[kind] in done.stdout.replace("\n", " ")
    assert clean(copy) == ""
    (record,) = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert record["mode"] == "compile" and record["status"] == "fail"
    assert expected_verdicts(SAMPLE)[kind] in record["reason"]


@pytest.mark.parametrize("kind", KINDS)
def test_estimate_runs_the_file_only_in_its_worker(copy, tmp_path, kind):
    sample = str(SAMPLE.relative_to(HOSTILE.parents[2]))
    done = harness_in(copy, tmp_path, "estimate", sample, "--device", "cpu", "--protection", kind, "--json")
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    record = json.loads(done.stdout)
    assert record["status"] == "fail" and expected_verdicts(SAMPLE)[kind] in record["reason"]
    assert clean(copy) == ""


def test_the_gates_compile_imports_the_file_only_in_its_worker(copy, tmp_path):
    """The gate's gfx950 compile (taken where the file cannot run here) through the same guarded worker."""
    script = ("from harness import submission as subs; from harness.remote import gate; "
              f"check = gate._compile_check(subs.resolve({str(SAMPLE.relative_to(HOSTILE.parents[2]))!r})); "
              "print(check.ok); print(*check.details, sep='\\n')")
    done = subprocess.run([sys.executable, "-c", script], cwd=copy, capture_output=True, text=True, timeout=600,
                          env=environment(copy, tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[0] == "False"
    kind = KINDS[-1]
    assert expected_verdicts(SAMPLE)[kind] in done.stdout
    assert clean(copy) == ""


@pytest.mark.parametrize("name", ["deletes_file.py", "forges_ledger.py", "writes_reference.py"])
def test_estimate_keeps_the_hostile_calls_off_the_disk(copy, tmp_path, name):
    """The samples that act when custom_kernel is called: estimate records those calls in the same jail as run."""
    sample = str((HOSTILE / name).relative_to(HOSTILE.parents[2]))
    done = harness_in(copy, tmp_path, "estimate", sample, "--device", "cpu", "--protection", KINDS[-1], "--json")
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    record = json.loads(done.stdout)
    assert record["status"] == "fail" and expected_verdicts(HOSTILE / name)[KINDS[-1]] in record["reason"], record
    assert clean(copy) == ""
