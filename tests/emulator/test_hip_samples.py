"""The HIP samples of tests/samples/hip_emulated/ through the real `harness run --device gfx950`, each against its
expected verdict in that folder's EXPECTED.md (slow: each sample is built for gfx950 and the CPU, then emulated).
Fast: the host units a sample's C++ gets (emulated_device.h where it asks for a CUDA tensor)."""
import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness import platform as platforms
from harness.emulator.hip_runtime import extension

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


def hip_source(name: str) -> str:
    """A sample's HIP_SOURCE, read without importing it."""
    for node in ast.parse((SAMPLES / name).read_text()).body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "HIP_SOURCE":
            return node.value.value
    raise LookupError(name)


def test_host_code_that_asks_for_cuda_tensors_gets_the_emulated_view():
    asks = extension.spec_of("asks", "void round_into(torch::Tensor v, torch::Tensor o);",
                             hip_source("cuda_at_import.py"))
    main, host = extension.main_unit(asks), extension.host_unit(asks, "// the hipified unit")
    for unit in (main, host):
        assert unit.index("#include <torch/extension.h>") < unit.index("#define is_cuda() is_cpu()")
        assert "#define kCUDA kCPU" in unit
    assert host.endswith("// the hipified unit")
    # a file that never asks keeps its units, and so its cached build
    plain = extension.spec_of("plain", "", hip_source("fp8_table_ocp.py"))
    assert extension.host_unit(plain, "unit") == "unit" and "#define" not in extension.main_unit(plain)
    assert plain.device_view == "" and asks.device_view


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
        if name.startswith("fp8_private_"):  # its table lives in scratch: the private segment was used
            loads = [kernel["counts"].get("by_class.scratch_load", 0) for kernel in record["emulator"].values()]
            assert sum(loads) > 0, (name, record["emulator"])
