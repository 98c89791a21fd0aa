"""harness/run/accuracy.py: the error measures behind the sharper verdict, on outputs the official check passes.

One (batch 1, kv 8192) case: long sequences average many values, so outputs are small (~0.05 rms) and
the official rtol = atol = 0.1 leaves a lot of room.
"""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import reference as ref
from harness.run import accuracy

# Its module-wide fixtures run once: make test gives the whole file to one xdist worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("accuracy")

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "tests" / "samples"


def sample_kernel(name: str):
    spec = importlib.util.spec_from_file_location(f"sample_{name}", SAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.custom_kernel


@pytest.fixture(scope="module")
def long_case():
    data = ref.generate_input(1, 1, 8192, seed=1360, device="cpu")
    expected = ref.ref_kernel(data)
    return data, expected, accuracy.noise_floor(data, expected)


def assess(output, expected, noise):
    return accuracy.assess(output, expected, rtol=ref.RTOL, atol=ref.ATOL, noise=noise)


def test_the_noise_floor_is_the_fp8_references_distance_from_exact_attention(long_case):
    data, expected, noise = long_case
    assert 0.01 < noise < 0.06  # fp8 Q and KV: a few percent
    assert accuracy.noise_floor(data) == noise  # the reference is computed when not given
    assert accuracy.FIVE_PERCENT_RULE == ref.MISMATCH_RATIO_LIMIT
    result = assess(expected.clone(), expected, noise)
    assert (result.relative_error, result.outside_share, result.warnings) == (0.0, 0.0, ())


def test_all_zeros_passes_officially_and_is_warned_about_twice(long_case):
    data, expected, noise = long_case
    zeros = sample_kernel("wrong_output")(data)
    ok, message = ref.check_implementation(data, zeros)
    assert ok and "mismatch_ratio=0.01" in message  # passes through the 5% rule: ~1.5% of elements not close
    result = assess(zeros, expected, noise)
    assert result.relative_error == 1.0
    assert 0.01 < result.outside_share < 0.02
    assert len(result.warnings) == 2
    assert result.warnings[0].startswith("passes only through the 5% rule: 1.")
    assert result.warnings[1].startswith("error 3") and "x the reference's own quantization noise" in result.warnings[1]


def test_half_the_kv_passes_every_element_and_is_warned_about(long_case):
    data, expected, noise = long_case
    half = sample_kernel("half_kv")(data)
    ok, message = ref.check_implementation(data, half)
    assert ok and message.startswith("Maximum error")  # not even the 5% rule was needed
    result = assess(half, expected, noise)
    assert result.outside_share == 0.0
    assert result.relative_error > 0.3 and result.noise_multiple > accuracy.NOISE_MULTIPLE_LIMIT
    assert result.warnings == (f"error {result.noise_multiple:.0f} x the reference's own quantization noise "
                               f"(norm-wise relative error {result.relative_error:.3g}; "
                               f"the a8w8 reference is {noise:.3g} from exact attention)",)


def test_measures_on_hand_made_tensors():
    expected = torch.tensor([1.0, 2.0, 2.0, 0.0])
    assert accuracy.relative_error(expected * 1.5, expected) == pytest.approx(0.5)
    assert accuracy.relative_error(torch.zeros(2), torch.zeros(2)) == 0.0
    assert accuracy.relative_error(torch.ones(2), torch.zeros(2)) == float("inf")
    output = torch.tensor([1.0, 2.0, float("nan"), 0.5])
    assert accuracy.outside_share(output, expected, rtol=0.1, atol=0.1) == 0.5  # the NaN and the 0.5
    result = accuracy.assess(output, expected, rtol=0.1, atol=0.1, noise=None)
    assert result.noise_floor is None and result.noise_multiple is None
    assert result.warnings == ()  # 50% outside: the official check fails it, no pass to second-guess


@pytest.mark.slow
def test_the_harness_passes_them_officially_and_warns_in_the_table_and_the_ledger(tmp_path):
    """End to end on the CPU: both samples pass the official check on a (1, 8192) case; the run warns, the
    ledger keeps the figures, and the table shows the error as a multiple of the reference's noise."""
    cases = tmp_path / "long.txt"
    cases.write_text("batchsize: 1; qseqlen: 1; kvseqlen: 8192; seed: 1360\n")
    done = subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", "run",
                           str(SAMPLES / "all_zeros.py"), str(SAMPLES / "half_kv.py"), "--device", "cpu",
                           "--cases", str(cases), "--mode", "test", "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stdout + done.stderr  # the official verdict: pass
    zeros, half = json.loads(done.stdout)
    assert zeros["status"] == half["status"] == "pass"
    assert any("passes only through the 5% rule" in w for w in zeros["warnings"])
    assert any("the reference's own quantization noise" in w for w in zeros["warnings"])
    assert any("the reference's own quantization noise" in w for w in half["warnings"])
    figures = half["results"][0]["accuracy"]
    assert figures["noise_multiple"] > 10 and 0.01 < figures["noise_floor"] < 0.06
    table = subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", "run",
                            str(SAMPLES / "half_kv.py"), "--device", "cpu", "--cases", str(cases)],
                           cwd=REPO, capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "200"})
    header = " ".join(table.stdout.split())  # the column's title is set on two lines: "rel err" / "(× ref noise)"
    assert "rel err" in header and "(× ref noise)" in header and f"({figures['noise_multiple']:.1f}×)" in table.stdout
    assert "warning: case 1: error" in table.stdout
