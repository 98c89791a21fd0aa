"""reference.quantize_mxfp4 against bytes of the pinned aiter's own dynamic_mxfp4_quant.

tests/fixtures/mxfp4_golden.npz was written by bench/tools/make_mxfp4_golden.py, which ran aiter's
fp4_utils.py (ROCm/aiter f3be04a12a, as shipped in amd-aiter 0.1.7.post2.dev18) through Triton's
interpreter; that script says how to reproduce it. Ties, near misses, subnormal and zero blocks, -0,
saturation, the bf16 extremes and random rows are all in it.
"""
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import reference as ref

# Its module-wide fixtures run once: make test gives the whole file to one xdist worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("mxfp4_golden")

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "mxfp4_golden.npz"
PINNED_FP4_UTILS_SHA256 = "488b2250bac5a4f498e4a53e9f4914c26eea74b5683951a7e09130f920c7ab88"


@pytest.fixture(scope="module")
def golden():
    data = np.load(FIXTURE)
    x = torch.from_numpy(data["x_bf16_bits"].view(np.int16).copy()).view(torch.bfloat16)
    return {"x": x, "fp4x2": torch.from_numpy(data["fp4x2"].copy()), "scales": torch.from_numpy(data["scales"].copy()),
            "meta": json.loads(str(data["meta"]))}


def test_fixture_came_from_the_pinned_aiter(golden):
    meta = golden["meta"]
    assert meta["fp4_utils_sha256"] == PINNED_FP4_UTILS_SHA256
    assert meta["commit"].startswith("f3be04a12a")
    rows = golden["x"].shape[0]
    assert rows >= 64 and golden["x"].shape[1] == 576
    assert tuple(meta["scale_shape"]) == ref.mxfp4_scale_shape(rows, 18) == (256, 24)
    assert meta["first_rows_all_written"] and meta["pad_rows_untouched"]


def test_fixture_holds_every_tie_both_signs_and_the_edge_blocks(golden):
    x = golden["x"].float().reshape(-1, ref.MXFP4_BLOCK)
    exponent = ref.e8m0_scale_exponent(x.abs().amax(dim=1, keepdim=True))
    scaled = (x * torch.ldexp(torch.ones_like(x[:, :1]), -exponent)).reshape(-1)
    for tie in (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0):
        assert (scaled == tie).any() and (scaled == -tie).any(), tie
    scale_bytes = golden["scales"][:, :18].reshape(-1)
    assert (scale_bytes == 0).any() and (scale_bytes == 254).any()  # clamped at -127 and +127
    assert (x.abs().amax(dim=1) == 0).any()  # an all-zero block
    assert (torch.signbit(x) & (x == 0)).any()  # -0
    assert (scaled.abs() > 6).any()  # saturation


def test_reference_quantizer_matches_aiter_byte_for_byte(golden):
    x = golden["x"]
    packed, scales = ref.quantize_mxfp4(x)
    rows = x.shape[0]
    assert scales.shape == (256, 24)
    assert torch.equal(packed.view(torch.uint8), golden["fp4x2"])
    assert torch.equal(scales.view(torch.uint8)[:rows], golden["scales"])  # all 24 columns, 18..23 = 0x00
    assert (golden["scales"][:, 18:] == 0).all()


def test_half_to_even_differs_from_aiter_only_on_ties(golden):
    x = golden["x"]
    even = ref.quantize_mxfp4(x, rounding="even")[0].view(torch.uint8)
    differ = even != golden["fp4x2"]
    assert differ.any()  # the fixture tells the two rules apart
    # Every differing byte holds a tie: its codes are one step apart in magnitude, same sign.
    away_codes = torch.stack((golden["fp4x2"] & 0xF, golden["fp4x2"] >> 4), -1)[differ]
    even_codes = torch.stack((even & 0xF, even >> 4), -1)[differ]
    steps = (away_codes & 7).int() - (even_codes & 7).int()
    assert ((steps == 0) | (steps == 1)).all() and (steps == 1).any()
    assert torch.equal(away_codes & 8, even_codes & 8)
