"""Whole Triton files with --device gfx950 (slow: minutes): their gfx950 code passes emulated through the real
`harness run`, and agrees with the Triton interpreter on the same inputs."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness import platform as platforms

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "tests" / "samples" / "triton_gfx950"
FILES = [REPO / "submissions" / "201_triton_fp8kv.py", SAMPLES / "mla201_mxfp4_option.py",
         REPO / "submissions" / "200_triton_mxfp4.py", REPO / "submissions" / "119_bmm_triton_hybrid.py",
         SAMPLES / "public_style_bf16.py"]
# (file, batch, kv): 119 takes its Triton path past 4096 KV rows
AGREEMENT = [(FILES[0], 3, 257), (FILES[1], 3, 257), (FILES[2], 3, 257), (FILES[3], 2, 4500), (FILES[4], 3, 257)]


@pytest.mark.emulator_e2e
def test_the_triton_files_pass_emulated_with_their_counts_in_the_record(tmp_path):
    assert platforms.emulator_missing() is None
    command = [sys.executable, "-c", "from harness.cli import main; main()", "run", *FILES,
               "--device", "gfx950", "--cases", "small", "--json"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1500,
                          env={**os.environ, "HARNESS_RESULTS": str(tmp_path / "results")})
    records = json.loads(done.stdout)
    assert len(records) == len(FILES), done.stderr[-2000:]
    for path, record in zip(FILES, records):
        assert record["status"] == "pass", (path.name, record["reason"])
        assert record["device"]["name"] == platforms.EMULATOR_MARK, path.name
        kernels = record["emulator"]
        assert kernels and all(k["counts"]["wave_instructions"] > 0 for k in kernels.values()), path.name
    mxfp4 = records[1]["emulator"]["mla_mxfp4_kernel"]["counts"]
    assert mxfp4["mfma_by_name.v_mfma_scale_f32_16x16x128_f8f6f4"] > 0


@pytest.mark.emulator_e2e
@pytest.mark.parametrize("path, batch, kv", AGREEMENT, ids=[p.stem for p, _, _ in AGREEMENT])
def test_the_emulator_agrees_with_the_interpreter(tmp_path, path, batch, kv):
    """Outputs within one bf16 step of their largest value: before the bf16 rounding the two differ only by the
    order of fp32 sums (the MFMA sums exactly), which fp8-quantized probabilities can carry into one output step."""
    outputs = {}
    for how in ("emulator", "interpreter"):
        out = tmp_path / f"{how}.pt"
        env = {**os.environ, "TRITON_INTERPRET": "1" if how == "interpreter" else "0", "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-m", "tests.emulator.agreement", how, str(path), str(batch),
                               str(kv), str(out)], cwd=REPO, capture_output=True, text=True, timeout=900, env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs[how] = torch.load(out)
    emulated, interpreted = outputs["emulator"].float(), outputs["interpreter"].float()
    step = 2.0 ** (torch.floor(torch.log2(interpreted.abs().max())) - 7)  # bf16's last place at the largest value
    assert (emulated - interpreted).abs().max() <= step
