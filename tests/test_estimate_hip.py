"""Issue 40: a HIP file is priced from its kernels emulated on gfx950 (hip_launches.py), on the path it takes
on MI355X; and the shared recordings (recordings.py) keep a call's reply safely on disk."""
import json
from pathlib import Path

import pytest
from rich.console import Console

from harness import platform as platforms, submission as subs
from harness.display import estimate as display_estimate
from harness.estimate import hip_launches, kernel_model, recordings, runner
from harness.estimate import model as cost
from harness.estimate import fit

REPO = Path(__file__).resolve().parent.parent
SMALL = {"batchsize": 4, "qseqlen": 1, "kvseqlen": 1024, "seed": 4217}


def summary(kv: int, batch: int = 4, splits: int = 2, calls: int = 2) -> dict:
    """The emulator's summary of one "estimate" request (`calls` calls): a split kernel whose waves do 10 + 3
    VALU per KV tile and 2 MFMA per tile, and a merge kernel of fixed work."""
    tiles = batch * -(-kv // 32)
    waves = 4
    split = {"workgroups": calls * splits * batch, "waves_per_workgroup": waves,
             "by_class.VALU": calls * waves * (10 * splits * batch + 3 * tiles),
             "by_class.MFMA": calls * waves * 2 * tiles, "mfma_by_name.v_mfma_f32_16x16x128_f8f6f4": calls * waves * 2 * tiles,
             "bytes.buffer_load": calls * tiles * 32 * 576, "bytes.lds_dma": calls * tiles * 32 * 576}
    merge = {"workgroups": calls * batch * 16, "waves_per_workgroup": 1, "by_class.VALU": calls * batch * 16 * 40,
             "bytes.global_load": calls * batch * 16 * splits * 2052}
    return {"split_kernel": {"launches": calls, "counts": split}, "merge_kernel": {"launches": calls, "counts": merge}}


def test_a_shape_is_emulated_at_whole_tiles_within_the_row_budget():
    assert hip_launches.lengths(4, 1024) == [1024]  # 4096 rows: the official shape itself
    assert hip_launches.lengths(256, 8192) == [32, 64]  # two tiles at least, whatever the budget
    assert hip_launches.lengths(32, 8192) == [64, 128]
    assert hip_launches.lengths(4, 8192, budget=4096) == [512, 1024]


def test_the_requests_two_calls_are_halved_and_an_uneven_kernel_is_named():
    one, uneven = hip_launches.one_call(summary(64))
    mangled, _ = hip_launches.launches([(64, {"_Z8k_kernelPKf": one["split_kernel"]})], 4, 64)
    assert mangled[0].kernel == "k_kernel" and mangled[0].fit.kernel == "k_kernel"
    assert one["split_kernel"]["launches"] == 1 and one["split_kernel"]["counts"]["workgroups"] == 8
    assert one["split_kernel"]["counts"]["waves_per_workgroup"] == 4 and uneven == []
    _, uneven = hip_launches.one_call({"k": {"launches": 3, "counts": {"workgroups": 3}}})
    assert uneven == ["k"]
    # the recorded call ran only its traced workgroups: the counts are the checked call's alone
    checked_only, _ = hip_launches.one_call({"k": {"launches": 2, "counted": 1, "counts": {"workgroups": 8}}})
    assert checked_only["k"]["counts"]["workgroups"] == 8 and checked_only["k"]["launches"] == 1


def test_hip_kernels_are_fitted_per_kv_tile_and_priced_by_the_kernel_model():
    calls = [(kv, hip_launches.one_call(summary(kv))[0]) for kv in (32, 64)]
    found, why = hip_launches.launches(calls, 4, 8192)
    assert why == ""
    split = next(launch for launch in found if launch.kernel == "split_kernel")
    assert split.name == "split_kernel (8 workgroups) [gfx950 emulated]" and split.programs == 8
    assert hip_launches.readable("_Z19mla_fp8_mfma_kernelPKtPKh") == "mla_fp8_mfma_kernel"
    assert split.fit.per_unit["by_class.MFMA"] == pytest.approx(2.0)  # per wave per KV tile
    assert split.bytes == pytest.approx(4 * 256 * 32 * 576)  # the buffer loads, LDS-DMA not twice, at 8192
    model, _ = fit.calibrated_model()
    priced = cost.price(split, model, shape=(4, 8192))
    assert priced.kernel_model and priced.basis == f"launch (facts) + {kernel_model.EXECUTED_METHOD}"
    assert "at 128 KV tiles per program" in priced.figures and "split_kernel: fixed" in priced.detail


def test_a_call_that_launched_no_hip_kernel_is_an_error_not_an_estimate():
    found, why = hip_launches.launches([(1024, {})], 4, 1024)
    assert found == [] and "did not run at kv 1024" in why and "not its MI355X path" in why


def test_a_reply_is_kept_only_on_commit_and_written_whole(tmp_path):
    shelf = recordings.Recordings(runner.__file__, "cpu", tmp_path)
    reply = {"ok": True, "result": {"good": True, "recording": {"ops": {}}}}
    shelf.keep("estimate", SMALL, reply)
    assert shelf.get("estimate", SMALL) is None and list(tmp_path.iterdir()) == []  # not before commit
    shelf.commit()
    again = recordings.Recordings(runner.__file__, "cpu", tmp_path)
    assert again.get("estimate", SMALL) == dict(reply, cached=True) and again.hits == 1
    assert again.get("estimate", dict(SMALL, seed=1)) is None  # another input: another entry
    assert recordings.Recordings(fit.__file__, "cpu", tmp_path).get("estimate", SMALL) is None  # another file
    (entry,) = tmp_path.iterdir()
    with pytest.raises(TypeError):  # a reply that cannot be written leaves the old entry whole, no stray file
        recordings._write(entry, {"ok": True, "result": object()})
    assert json.loads(entry.read_text()) == reply and [p.name for p in tmp_path.iterdir()] == [entry.name]
    entry.write_text('{"ok": tr')  # half an entry (written by another tool): read as none
    assert recordings.Recordings(runner.__file__, "cpu", tmp_path).get("estimate", SMALL) is None


@pytest.mark.slow
def test_estimate_120_on_the_cpu_prices_its_gfx950_kernels_per_shape():
    if platforms.emulator_missing():
        result = runner.run(subs.resolve("120"), platforms.detect("cpu"), specs=[SMALL])
        assert result.status == "skip" and "clang-22" in result.refusal
        return
    result = runner.run(subs.resolve("120"), platforms.detect("cpu"), specs=[SMALL])
    assert result.status == "pass", result.refusal
    hip = [p for p in result.shapes[0].estimate.priced if p.launch.kind == "hip"]
    names = " ".join(p.launch.kernel for p in hip)
    assert "mla_fp8_mfma_kernel" in names and all(p.kernel_model for p in hip)
    assert all(hip_launches.MARK in p.launch.name and not p.calibrated for p in hip)
    console = Console(record=True, width=200)
    display_estimate.print_estimate(console, result)
    text = " ".join(console.export_text().split())
    assert "recorded on gfx950 emulated" in text and "mla_fp8_mfma_kernel" in text and "4×1024" in text
    assert text.count(kernel_model.TIMELINE) == 1 and "latency-bound at kv 1024" in text  # traced, timed
    # the recorded call ran only the traced workgroups of each launch (the checked call ran them all)
    traces = [t for p in hip for _, launched in p.launch.fit.traced for t in launched]
    assert traces and all(t.only_traced for t in traces)


@pytest.mark.slow
def test_a_recorded_call_whose_traced_workgroups_wait_on_others_runs_again_whole():
    sample = REPO / "tests" / "samples" / "hip_emulated" / "waits_on_another_workgroup.py"
    result = runner.run(subs.resolve(str(sample)), platforms.detect("cpu"), specs=[dict(SMALL, kvseqlen=64)])
    if platforms.emulator_missing():
        assert result.status == "skip" and "clang-22" in result.refusal
        return
    assert result.status == "pass", result.refusal
    [waits] = [p for p in result.shapes[0].estimate.priced if p.launch.kind == "hip"]
    traces = [t for _, launched in waits.launch.fit.traced for t in launched]
    assert waits.launch.kernel == "wait_for_second" and traces and not any(t.only_traced for t in traces)


@pytest.mark.slow
def test_a_shape_checked_shorter_is_priced_from_its_launches_traced_at_its_own_length():
    # 120 splits a 256-row sequence in 4 and merges them; a 64-row one (its checked length here) not at all
    spec = {"batchsize": 1, "qseqlen": 1, "kvseqlen": 256, "seed": 4217}
    result = runner.run(subs.resolve("120"), platforms.detect("cpu"), specs=[spec], budget=64)
    if platforms.emulator_missing():
        assert result.status == "skip" and "clang-22" in result.refusal
        return
    assert result.status == "pass", result.refusal
    shape = result.shapes[0]
    hip = {p.launch.kernel: p for p in shape.estimate.priced if p.launch.kind == "hip"}
    assert shape.recorded_kv == [64] and set(hip) == {"mla_fp8_mfma_kernel", "mla_merge_splits_kernel"}
    assert hip["mla_fp8_mfma_kernel"].launch.programs == 4  # (split, sequence) blocks at kv 256 itself
    assert shape.note == "HIP launches traced at kv 256 itself; the rest checked at kv 64, scaled to 256"
    assert all("traced at kv 256 itself, its traced workgroups alone (checked at kv 64)" in p.figures
               for p in hip.values())
    traces = [t for p in hip.values() for _, launched in p.launch.fit.traced for t in launched]
    assert traces and all(t.only_traced and t.workgroups for t in traces)


@pytest.mark.slow
def test_a_traced_call_that_fails_at_the_shape_leaves_the_shorter_calls_to_price_it_and_says_why():
    # the file reads what every workgroup wrote: with the traced ones alone it raises, and the call is no trace
    sample = REPO / "tests" / "samples" / "hip_emulated" / "waits_on_another_workgroup.py"
    result = runner.run(subs.resolve(str(sample)), platforms.detect("cpu"), specs=[dict(SMALL, kvseqlen=128)],
                        budget=256)
    if platforms.emulator_missing():
        assert result.status == "skip" and "clang-22" in result.refusal
        return
    assert result.status == "pass", result.refusal
    [waits] = [p for p in result.shapes[0].estimate.priced if p.launch.kind == "hip"]
    assert result.shapes[0].recorded_kv == [64] and waits.launch.fit.traced[0][0] == 64
    assert "scaled in proportion to kv 128" in waits.figures  # (the kv 64 call may be another test's, replayed)
    assert "not traced at kv 128 itself: RuntimeError: workgroups that saw the flag" in waits.figures
