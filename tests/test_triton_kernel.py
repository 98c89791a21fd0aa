"""Submission 200 (portable Triton MLA decode over MXFP4 KV), checked on the CPU through TRITON_INTERPRET=1.

The kernel must match exact MXFP4 math (not only the loose official tolerance), pass the official check,
handle uneven sequence lengths, empty split slices and aiter's padded scale layout (row stride 24), and
keep the submission-file rules. One GPU test runs the official shapes on a device.
"""
import math
from pathlib import Path

import pytest
import torch

import reference as ref
from kernel_loading import load_file, run_interpreted

# Its module-wide fixtures run once: make test gives the whole file to one xdist worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("triton_kernel")

REPO = Path(__file__).resolve().parent.parent
KERNEL_FILE = REPO / "submissions" / "200_triton_mxfp4.py"
INTERPRETED_CHECKS = Path(__file__).resolve().parent / "kernel_checks" / "interpret_200.py"


def _load_submission(name: str):
    return load_file(KERNEL_FILE, name)


@pytest.fixture(scope="module")
def sub():
    return _load_submission("sub200_host")


@pytest.fixture(scope="module")
def interpreted():
    """Results of 200 run under TRITON_INTERPRET=1 in a child process (Triton picks the interpreter at its
    first import, so this process, which may have imported Triton already, cannot switch)."""
    return run_interpreted(INTERPRETED_CHECKS, timeout=900)


@pytest.mark.slow
def test_matches_exact_mxfp4_math(interpreted):
    assert len(interpreted["exact"]) == 3
    for case in interpreted["exact"]:
        batch = case["case"][0]
        assert case["shape"] == [batch, 16, 512] and case["dtype"] == "torch.bfloat16"
        # bf16 output rounding (2^-9 relative) is all that should separate kernel and float64 math.
        assert case["max_err"] < 4e-3 + 8e-3 * case["max_ref"], case


@pytest.mark.slow
def test_custom_kernel_passes_the_official_check(interpreted):
    assert len(interpreted["official"]) == 2
    for case in interpreted["official"]:
        assert case["ok"], case


@pytest.mark.slow
def test_uneven_lengths_and_empty_slices(interpreted):
    uneven = interpreted["uneven"]
    assert uneven["finite"] and uneven["finite_bf16"]
    assert uneven["max_err"] < 2e-2
    assert uneven["ok"], uneven["message"]


@pytest.mark.slow
def test_scale_padding_and_row_stride_do_not_change_the_output(interpreted):
    layout = interpreted["layout"]
    assert layout["shape"] == [256, 24] and layout["stride"] == 24  # aiter's layout was in use
    # Poisoned pad rows and columns 18..23, or a compact stride-18 copy: same output, decoded and dot_scaled.
    assert layout["equal"] == {"poisoned": [True, True], "compact": [True, True]}


@pytest.mark.slow
def test_split_counts_agree(interpreted):
    assert interpreted["splits_agree"] < 1e-2


@pytest.mark.slow
@pytest.mark.parametrize("path", ["fp8", "fp8_reuse", "bf16"])
def test_fp8_and_bf16_paths_pass_the_official_check(interpreted, path):
    result = interpreted["paths"][path]
    assert result["ok"] and result["message"].startswith("Maximum error"), result  # no 4-bit rounding here


@pytest.mark.slow
def test_scaled_dot_scores_match_the_decoded_path(interpreted):
    assert interpreted["scaled_vs_decoded"] < 1e-2


@pytest.mark.slow
def test_output_is_fresh_every_call(interpreted):
    assert interpreted["fresh"] == {"differ": True, "repeatable": True}


def test_unknown_kv_format_is_a_clear_error(sub):
    data = ref.generate_input(1, 1, 64, 11, device="cpu")
    with pytest.raises(ValueError, match="unknown KV format"):
        sub.mla_decode(data, kv_format="int4")


def test_choose_splits(sub):
    # A batch that fills the device: one split, no reduce.
    assert sub.choose_splits(256, 8192, 132, 64, 1) == 1
    assert sub.choose_splits(256, 1024, 132, 64, 2) == 1
    # Small batches with long sequences split, never into slices under 128 tokens, and the programs
    # fit in whole waves: 64 x 8192 on 132 one-program SMs -> 2 splits (128 programs, one wave).
    assert sub.choose_splits(64, 8192, 132, 64, 1) == 2
    for batch, kv in [(4, 8192), (4, 1024), (32, 8192), (64, 1024), (1, 300)]:
        for per_cu in (1, 2):
            splits = sub.choose_splits(batch, kv, 132, 64, per_cu)
            assert 1 <= splits <= 64
            assert kv / splits >= 128 or splits == 1
    assert sub.choose_splits(4, 8192, 132, 64, 1) >= 16


def test_submission_file_rules():
    text = KERNEL_FILE.read_text()
    lines = text.splitlines()
    assert lines[0] == "#!POPCORN leaderboard amd-mixed-mla"
    assert lines[1] == "#!POPCORN gpu MI355X"
    assert "from task import input_t, output_t" in text
    assert "str" + "eam" not in text.lower()
    assert "import harness" not in text and "from harness" not in text
    assert len(text.encode()) < 1_000_000
    for hard_coded in ('device="cuda"', "device='cuda'", ".cuda()", 'torch.device("cuda")'):
        assert hard_coded not in text  # portable: the device comes from the inputs


@pytest.fixture(scope="module")
def device_sub():
    if not torch.cuda.is_available():
        pytest.fail("this test needs a CUDA or ROCm device")
    return _load_submission("sub200_device")


@pytest.mark.gpu
@pytest.mark.parametrize("spec", [(4, 1024, 4217), (4, 8192, 4220), (32, 1024, 5412), (64, 8192, 1360),
                                  (256, 1024, 9823), (256, 8192, 9826)])
def test_official_shapes_on_the_device(device_sub, spec):
    gpu_sub = device_sub
    batch, kv_len, seed = spec
    data = ref.generate_input(batch, 1, kv_len, seed, device="cuda")
    ok, message = ref.check_implementation(data, gpu_sub.custom_kernel(data))
    assert ok, message
    assert math.isfinite(float(gpu_sub.custom_kernel(data).float().abs().max()))
    for kv_format in ("mxfp4", "fp8"):  # the other paths stay correct too
        ok, message = ref.check_implementation(data, gpu_sub.mla_decode(data, kv_format=kv_format))
        assert ok, f"{kv_format}: {message}"
