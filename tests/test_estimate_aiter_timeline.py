"""Issue 40: `harness estimate` prices an aiter stage-1 launch by the
gfx950 timing model over the wheel's code object traced at the shape
(aiter_launches.py); the per-variant curve stays as its cross-check,
and prices what cannot be traced, saying why."""
from types import SimpleNamespace

import pytest

from harness.estimate import aiter_launches, fit, kernel_model
from harness.estimate import launches as launch_lists
from harness.estimate import model as cost
from harness.estimate.aiter_traces import Stage1

A16W16 = "mla_dec_stage1_bf16_a16w16_subQ16_mqa16"
A16W16_PS = "mla_a16w16_qh16_m16x4_n16x1_coex0_mask1_ps"  # not in the wheel's pin


def recording(kernel: str, persistent: bool, splits, batch: int,
              kv: int) -> dict:
    """One recorded mla_decode_fwd call, as the stand-in's journal
    writes it."""
    call = {"api": "aiter.mla.mla_decode_fwd", "kernel": kernel,
            "variant": "a16w16", "persistent": persistent,
            "num_kv_splits": splits, "batch": batch,
            "total_q": batch, "total_kv": batch * kv, "launches": 2,
            "q_dtype": "bfloat16", "kv_dtype": "bfloat16"}
    return {"aiter": [call], "ops": {}, "triton": [], "syncs": {},
            "allocations": 1}


def asm_row(found: dict, shape: tuple) -> cost.Priced:
    model, _ = fit.calibrated_model()
    launches = launch_lists.from_recording(found)
    priced = cost.estimate_shape(shape, launches, model).priced
    return next(p for p in priced if p.launch.kind == "asm")


def test_a_stage1_launch_is_priced_by_the_timing_model():
    row = asm_row(recording(A16W16, False, 2, 2, 256), (2, 256))
    assert row.basis.startswith(kernel_model.TIMELINE)
    assert row.kernel_model and row.us > 0
    assert row.low_us <= row.us <= row.high_us
    assert f"{A16W16}: " in row.detail
    assert "workgroups traced" in row.detail
    assert "(non-persistent, 2 splits) at 2x256" in row.figures
    assert "per-variant curve: " in row.figures


def test_a_code_object_the_wheel_lacks_is_priced_by_the_curve():
    row = asm_row(recording(A16W16_PS, True, 32, 2, 256), (2, 256))
    assert not row.basis.startswith(kernel_model.TIMELINE)
    assert row.detail == (f"{A16W16_PS}: not traced: the pinned aiter"
                          f" wheel has no code object {A16W16_PS}")


def test_the_official_split_count_is_derived_from_the_recording():
    def stage(splits, recorded_kv, persistent=False):
        found = launch_lists.RecordedStage1(
            A16W16, "a16w16", persistent, splits, (recorded_kv,))
        return aiter_launches.official_stage(found, (100, 8192))

    # 2 splits at 100x512: aiter's own choice there; 5 at 8192
    chosen, words = stage(2, 512)
    assert chosen == Stage1("a16w16", False, 5)
    assert words == ("2 splits at kv 512 taken as aiter's get_meta_param"
                     " choice: at kv 8192 it picks 5")
    assert stage(8, 8192) == (Stage1("a16w16", False, 8),
                              "8 splits as recorded at 100x8192")
    kept, words = stage(3, 512)  # not aiter's: the file's own
    assert kept.splits == 3 and "the file's own" in words
    ps, words = stage(None, 512, persistent=True)
    assert ps == Stage1("a16w16", True, 32)
    assert "none recorded" in words


def test_a_scaled_call_keeps_the_kv_it_was_recorded_at():
    short = recording(A16W16, False, 4, 2, 96)
    long = recording(A16W16, False, 4, 2, 128)
    scaled, _ = launch_lists.scale(short, long, 96, 128, 1024)
    asm = launch_lists.from_recording(scaled)[1]
    assert asm.fit.lengths == (96, 128) and asm.fit.splits == 4
    assert scaled["aiter"][0]["total_kv"] == 2 * 1024


def test_the_curve_price_is_the_cross_check_it_names():
    model, _ = fit.calibrated_model()
    launches = launch_lists.from_recording(
        recording(A16W16, False, 2, 2, 256))
    asm = launches[1]
    curve = cost._asm_price(asm, model)
    row = cost.price(asm, model, shape=(2, 256))
    assert f"per-variant curve: {curve.us:.3g} us" in row.figures
    assert cost.price(asm, model).basis == curve.basis  # no shape


def test_past_the_recorded_rows_it_is_traced_short_and_extrapolated():
    found = launch_lists.RecordedStage1(
        A16W16, "a16w16", False, 1, (48, 64))
    stage = Stage1("a16w16", False, 1)
    lengths, words = aiter_launches.trace_lengths(
        found, stage, (256, 8192))
    assert lengths == (48, 64)  # 3 x 8192 rows traced > 256 x 64
    assert words == ("traced at kv 48 and 64 (at 8192 its traced "
                     "workgroups would read 24,576 KV rows, the "
                     "recorded call 16,384), extrapolated linearly "
                     "to kv 8192")
    split = Stage1("a16w16", False, 16)  # 3 x 64 rows <= 4 x 64
    assert aiter_launches.trace_lengths(found, split, (4, 1024)) \
        == ((1024,), "")
    # past the launch gap: a line through the two; one point: in proportion; never falling
    def priced(latency):
        return [SimpleNamespace(parts={"issue": 1.0, "latency": latency, "bandwidth": 1.0})]
    assert kernel_model.along_kv([(48, priced(3.0)), (64, priced(4.0))], 128) == 8.0
    assert kernel_model.along_kv([(64, priced(4.0))], 128) == 8.0
    assert kernel_model.along_kv([(48, priced(5.0)), (64, priced(4.0))], 128) == 4.0


def test_a_launch_past_the_recorded_rows_is_priced_from_short_traces():
    short = recording(A16W16, False, 1, 2, 32)
    long = recording(A16W16, False, 1, 2, 64)
    scaled, _ = launch_lists.scale(short, long, 32, 64, 8192)
    row = asm_row(scaled, (2, 8192))
    assert row.basis.startswith(kernel_model.TIMELINE)
    assert "(non-persistent, 1 splits) at 2x8192" in row.figures
    assert "the file's own: aiter would pick" in row.figures
    assert "traced at kv 32 and 64" in row.figures
    assert "extrapolated linearly to kv 8192" in row.figures
    # the line through the two lengths' prices, read at 8192
    at_32, at_64 = asm_row(short, (2, 32)).us, asm_row(long, (2, 64)).us
    slope = (at_64 - at_32) / 32
    assert slope > 0
    assert row.us == pytest.approx(at_64 + slope * (8192 - 64))
