"""aiter's mla_reduce_v1 from the wheel's reduce.cu on the gfx950 emulator, against the stand-in's torch
log-sum-exp merge on the same partial rows (harness/aiter_gfx950/reduce.py, issue 38).

The first run builds the module from the wheel's sources (about ten minutes on 2 cores).
"""
import pytest
import torch

import reference
from harness.aiter_gfx950 import build, reduce
from harness.aiter_standin import mla as standin_mla
from harness.emulator.errors import EmulationFault

HEADS, V_DIM = 16, 512


@pytest.fixture(scope="module")
def built_module():
    build.load(reduce.MODULE)


def _partials(rows: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    data = torch.randn(rows, HEADS, V_DIM, generator=generator)
    lse = torch.randn(rows, HEADS, generator=generator) * 3  # spans of unlike weight
    return data, lse


@pytest.mark.slow
def test_the_merge_is_the_stand_ins(built_module):
    """Decode tiles of one q row (q length 1, as the task's): tile 0 from 2 splits; tile 1 none (stage 1 wrote
    it: left alone); tile 2 from 5 splits, out of order."""
    data, lse = _partials(12, seed=5)
    reduce_indptr = torch.tensor([0, 2, 2, 7], dtype=torch.int32)
    final_map = torch.tensor([[0, 1], [1, 2], [2, 3]], dtype=torch.int32)
    partial_map = torch.tensor([3, 0, 10, 4, 11, 1, 7], dtype=torch.int32)
    before = torch.randn(3, HEADS, V_DIM).to(torch.bfloat16)
    emulated, modelled = before.clone(), before.clone()
    reduce.mla_reduce_v1(data, lse, reduce_indptr, final_map, partial_map, 1, emulated)
    standin_mla._reduce(data, lse, reduce_indptr, final_map, partial_map, 1, modelled)
    assert torch.equal(emulated[1], before[1]) and not torch.equal(emulated[0], before[0])
    assert torch.allclose(emulated.float(), modelled.float(), rtol=reference.RTOL, atol=reference.ATOL)
    assert (emulated.float() - modelled.float()).abs().max() <= 1e-2  # bf16 rounding of the same float32 sums


@pytest.mark.slow
def test_a_tile_of_two_q_rows_races_in_lds(built_module):
    """reduce.cu loops over a tile's q rows: wave 0 writes row r + 1's split weights to LDS with no barrier
    after both waves read row r's (reduce_output, reduce.cu:282); the race checker names that read."""
    data, lse = _partials(6, seed=7)
    reduce_indptr = torch.tensor([0, 2], dtype=torch.int32)
    final_map = torch.tensor([[0, 2]], dtype=torch.int32)
    partial_map = torch.tensor([0, 3], dtype=torch.int32)
    out = torch.zeros(2, HEADS, V_DIM, dtype=torch.bfloat16)
    with pytest.raises(EmulationFault, match=r"lds race: wave 1 reads LDS byte 0 that wave 0 touched.*reduce.cu:282"):
        reduce.mla_reduce_v1(data, lse, reduce_indptr, final_map, partial_map, 2, out)


@pytest.mark.slow
def test_final_lse_is_the_merged_log_sum_exp(built_module, monkeypatch):
    """Through the stand-in's mla_reduce_v1, emulating: aiter's kernel writes final_lse, and the case is told."""
    monkeypatch.setenv("HARNESS_AITER", "emulate")
    build.take_lines()
    data, lse = _partials(4, seed=9)
    reduce_indptr = torch.tensor([0, 4], dtype=torch.int32)
    final_map = torch.tensor([[0, 1]], dtype=torch.int32)
    partial_map = torch.tensor([2, 0, 3, 1], dtype=torch.int32)
    out, final_lse = torch.zeros(1, HEADS, V_DIM, dtype=torch.bfloat16), torch.zeros(1, HEADS)
    standin_mla.mla_reduce_v1(data, lse, reduce_indptr, final_map, partial_map, 1, out, final_lse)
    torch.testing.assert_close(final_lse[0], torch.logsumexp(lse, dim=0), rtol=1e-5, atol=1e-5)
    assert build.take_lines() == ["aiter emulated (gfx950; amd-aiter 0.1.7.post2.dev18 sources built by the "
                                  "harness: mla_reduce_v1 (reduce.cu)): correctness only"]
