"""The kernel model from the gfx950 emulator's executed counts (harness/estimate/executed.py): the fit of a fixed part
per program and a part per KV tile (or per split), its price, and the fallback to the static count with the reason."""
import pytest

from harness.estimate import calibration as calib
from harness.estimate import executed, fit, kernel_model
from harness.estimate import model as cost
from harness.estimate.gfx950_kernels import Gfx950Kernels
from harness.estimate.mi355x_path import MERGE_KERNEL, SPLIT_KERNEL

# per wave: a program's fixed part and each 32-token tile's part (201's split kernel, as the emulator counted it)
FIXED = {"by_class.VALU": 1000, "by_class.LDS": 20, "by_class.SALU": 60, "bytes.lds_read": 4000}
PER_TILE = {"by_class.VALU": 230, "by_class.MFMA": 14, "mfma_by_name.v_mfma_f32_16x16x32_fp8_fp8": 10,
            "mfma_by_name.v_mfma_f32_16x16x128_f8f6f4": 4, "by_class.LDS": 100, "bytes.lds_read": 30000}


def _call(batch: int, kv: int, splits: int, waves: int = 4) -> tuple:
    """The reply's "emulated" field of one call whose split kernel runs `splits` programs per sequence (and, with
    more than one, the merge kernel: 16 programs per sequence, 130 VALU per wave + 6 per split)."""
    programs = batch * splits
    tiles = kv // 32 / splits
    counts = {key: programs * waves * (FIXED.get(key, 0) + PER_TILE.get(key, 0) * tiles)
              for key in set(FIXED) | set(PER_TILE)}
    emulated = {SPLIT_KERNEL: {"launches": 1, "counts": dict(counts, workgroups=programs, waves_per_workgroup=waves)}}
    if splits > 1:
        merge = {"by_class.VALU": batch * 16 * waves * (130 + 6 * splits), "workgroups": batch * 16,
                 "waves_per_workgroup": waves}
        emulated[MERGE_KERNEL] = {"launches": 1, "counts": merge}
    return (batch, kv), emulated


CALLS = [_call(1, 64, 1), _call(1, 128, 1), _call(1, 256, 2), _call(1, 512, 4), _call(2, 1024, 8)]


def test_the_fit_recovers_the_fixed_and_per_tile_parts_per_wave():
    found = executed.fit_calls(CALLS, merge_by_split=True)
    split = found.fits[SPLIT_KERNEL]
    assert split.unit == "KV tile" and split.waves == 4 and split.calls == 5 and split.misfit == pytest.approx(0, abs=1e-9)
    for key in PER_TILE:
        assert split.per_unit[key] == pytest.approx(PER_TILE[key]) and split.fixed[key] == pytest.approx(FIXED.get(key, 0))
    merge = found.fits[MERGE_KERNEL]  # only the calls with more than one split launch it: 2, 4 and 8 splits
    assert merge.unit == "split" and merge.calls == 3
    assert (merge.fixed["by_class.VALU"], merge.per_unit["by_class.VALU"]) == pytest.approx((130, 6))
    # at an official shape: 256 x 8192 on 2 splits is 128 tiles per program; the merge reads 2 splits
    assert found.units(split, 256, 8192, 512, 2) == 128 and found.units(merge, 256, 8192, 4096, 2) == 2
    assert split.per_wave(128)["by_class.VALU"] == pytest.approx(1000 + 230 * 128)


def test_a_merge_kernel_outside_201s_plan_is_fitted_per_kv_tile_and_a_constant_unit_is_not_separable():
    found = executed.fit_calls(CALLS, merge_by_split=False)
    assert found.fits[MERGE_KERNEL].unit == "KV tile"
    same = executed.fit_calls([_call(1, 128, 1), _call(1, 128, 1)], merge_by_split=True)
    assert not same.fits and "not separable" in same.why_not(SPLIT_KERNEL)
    assert executed.fit_line([1, 2, 4], [3, 5, 9]) == pytest.approx((1, 2)) and executed.fit_line([2, 2], [1, 3]) is None


def test_the_price_sets_executed_instructions_and_lds_bytes_against_the_bytes():
    costs = kernel_model.load_costs()
    assert costs.lds_bytes_per_clock == 128  # data file: kernel_model_executed, with its source
    split = executed.fit_calls(CALLS, merge_by_split=True).fits[SPLIT_KERNEL]
    nbytes = 256 * 8192 * 576
    found = kernel_model.price_executed(nbytes, 512, 1, 128, split, costs, 8e12, 3e12, 256, 2)
    waves, per = 512 * 4, split.per_wave(128)
    cycles = per["by_class.VALU"] * 4 + 10 * 128 * 16 + 4 * 128 * 32
    simd_us = waves * cycles / 1024 / 2.4e9 * 1e6
    lds_us = waves * per["bytes.lds_read"] / (128 * 256) / 2.4e9 * 1e6
    assert found.instructions_us == pytest.approx(max(simd_us, lds_us))
    assert found.us == pytest.approx(max(nbytes / 8e12 * 1e6, simd_us, lds_us))  # 2 waves/SIMD: they overlap
    assert found.high_us >= nbytes / 3e12 * 1e6 + simd_us + lds_us - 1e-9 and found.low_us <= found.us
    assert found.basis.startswith(kernel_model.EXECUTED) and "per KV tile 230 VALU + 14 MFMA + 100 LDS" in found.basis
    lone = kernel_model.price_executed(nbytes, 512, 1, 128, split, costs, 8e12, 3e12, 256, 1)
    assert lone.us == pytest.approx(nbytes / 8e12 * 1e6 + max(simd_us, lds_us))  # one wave per SIMD: added


def _kernels(fits: executed.Executed) -> Gfx950Kernels:
    kernels = Gfx950Kernels(lambda names: [])  # no AOT_SPECS entry: no static count either
    kernels.executed = fits
    return kernels


def test_a_launch_is_priced_from_executed_counts_where_there_are_some_and_says_why_not_elsewhere(monkeypatch):
    model, _ = fit.calibrated_model()
    launch = calib.Launch("triton", f"{SPLIT_KERNEL} grid (2, 256) [gfx950 plan]", bytes=256 * 8192 * 576,
                          programs=512, kernel=SPLIT_KERNEL, splits=2)
    priced = cost.price(launch, model, _kernels(executed.fit_calls(CALLS, True)), (256, 8192))
    assert priced.kernel_model and not priced.calibrated and kernel_model.EXECUTED in priced.full
    assert "128 KV tiles per program" in priced.full
    monkeypatch.setenv(executed.SWITCH_ENV, "0")
    off = executed.Executed(why=executed.why_not_emulated(type("S", (), {"requirements": {"triton"},
                                                                           "optional": set()})(), None))
    fallback = cost.price(launch, model, _kernels(off), (256, 8192))
    assert not fallback.kernel_model and cost.UNCALIBRATED in fallback.full
    assert f"not from executed counts: emulated calls turned off ({executed.SWITCH_ENV}=0)" in fallback.full
    failed = executed.Executed(why="the gfx950 emulator could not run it at 1×64: NotEmulated: v_foo")
    assert "NotEmulated: v_foo" in cost.price(launch, model, _kernels(failed), (256, 8192)).full
