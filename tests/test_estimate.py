"""harness estimate: the MI355X cost model's data file, fit and leave-one-out, the recorder, CPU scaling, the
refusals, the samples' estimates, and where estimates show (record, scoreboard, diff --estimate)."""
import re
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from harness import platform as platforms
from harness import submission as subs
from harness.cli import main
from harness.estimate import calibration as calib
from harness.estimate import fit, kernel_model, launches, runner
from harness.estimate import model as cost
from harness.results import estimates, ledger, records, scoreboard
from harness.run import recording

# Its module-wide fixtures run once: make test gives the whole file to one xdist worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("estimate")

SAMPLES = Path(__file__).parent / "samples"
ESTIMATE_SAMPLES = SAMPLES / "aiter"
SMALL = {"batchsize": 4, "qseqlen": 1, "kvseqlen": 1024, "seed": 4217}
LARGE = {"batchsize": 256, "qseqlen": 1, "kvseqlen": 8192, "seed": 9826}


def test_a_variant_without_figures_is_bounded_and_widens_the_band():
    model, _ = fit.calibrated_model()
    nbytes = calib.kernel_bytes(64, 64 * 8192, 2.0, 1.0)
    per_cu, tokens = calib.schedule(64, 8192, 4, persistent=False)
    asm = calib.Launch("asm", "mla a16w8", bytes=nbytes, variant="a16w8_np", per_cu=per_cu, serial_tokens=tokens)
    one = [calib.Launch("python", "call"), asm]
    guessed = cost.estimate_shape((64, 8192), one, model)
    priced = guessed.priced[1]
    known = [model.asm_us(asm, variant) for variant in model.variants()]
    assert not priced.calibrated and (priced.low_us, priced.high_us) == (min(known), max(known))
    assert guessed.uncalibrated == ["mla a16w8: no figure for a16w8_np: bounded by the calibrated variants"]
    fitted = cost.estimate_shape((64, 8192), [one[0], replace(asm, variant="a8w8_ps")], model)
    assert guessed.high_us / guessed.low_us > fitted.high_us / fitted.low_us


def test_ranked_mode_adds_the_facts_offsets_widened_by_the_paired_public_figures():
    model, _ = fit.calibrated_model()
    assert model.ranked_offset_us == (0.0, 12.0)  # facts 0-5 us; one public file's (64, 8k) ran 12 us slower ranked
    shape = cost.estimate_shape((4, 1024), [calib.Launch("python", "call")], model)
    assert shape.ranked_us == pytest.approx(shape.us + 6.0) and shape.ranked_high_us == pytest.approx(shape.high_us + 12)


def test_the_recorder_counts_launches_allocations_and_syncs():
    x, indptr = torch.ones(8, 4), torch.tensor([0, 3, 8], dtype=torch.int32)
    with recording.recording("cpu") as recorded:
        rows = int(indptr[-1].item())
        starts = indptr.tolist()
        out = torch.empty((rows, 4))
        out.copy_(x * 2)
        view = out.view(-1).t()
    found = recorded()
    assert found["syncs"] == {".item()": 1, ".tolist()": 1} and starts == [0, 3, 8] and view.numel() == 32
    assert found["allocations"] == 1
    assert found["ops"]["aten.mul"] == {"count": 1, "bytes": 2 * 8 * 4 * 4}
    assert set(found["ops"]) == {"aten.mul", "aten.copy_"}
    assert "item" not in torch.Tensor.__dict__ and "tolist" not in torch.Tensor.__dict__  # patches undone


def test_the_recorder_takes_aiter_calls_from_the_journal_not_from_the_stand_ins_own_torch_work():
    from harness.aiter_standin import quant

    x = torch.randn(4, 16, 576).to(torch.bfloat16)
    out, scale = torch.empty(x.shape, dtype=torch.float8_e4m3fn), torch.zeros(1)
    with recording.recording("cpu") as recorded:
        quant.dynamic_per_tensor_quant(out, x, scale)
    found = recorded()
    assert [call["kernel"] for call in found["aiter"]] == ["dynamic_per_tensor_quant"]
    assert found["ops"] == {} and found["syncs"] == {}
    priced = launches.from_recording(found)
    assert [(l.kind, l.name) for l in priced] == [("python", "custom_kernel call"), ("aiter", "dynamic_per_tensor_quant")]


def test_cpu_scaling_extrapolates_linearly_in_the_kv_length():
    def made(nbytes, total_kv):
        call = {"api": "aiter.mla.mla_decode_fwd", "kernel": "k", "variant": "a16w16", "persistent": False,
                "total_q": 4, "total_kv": total_kv, "launches": 2}
        return {"aiter": [call], "ops": {"aten.bmm": {"count": 2, "bytes": nbytes}}, "allocations": 1,
                "syncs": {".item()": 1}, "triton": []}
    scaled, note = launches.scale(made(1000, 4 * 96), made(1200, 4 * 128), 96, 128, 1024)
    assert scaled["ops"]["aten.bmm"] == {"count": 2, "bytes": pytest.approx(1000 + 200 * (1024 - 96) / 32)}
    assert scaled["aiter"][0]["total_kv"] == 4 * 1024 and note == "recorded at kv 96 and 128, extrapolated to 1024"
    other = made(1000, 4 * 96)
    other["aiter"][0]["variant"] = "a8w8"
    scaled, note = launches.scale(other, made(1200, 4 * 128), 96, 128, 1024)
    assert "differ" in note and scaled["ops"]["aten.bmm"]["bytes"] == pytest.approx(1200 * 8)


def _estimate(name: str, specs: list, budget: int = 4096):
    return runner.run(subs.resolve(str(ESTIMATE_SAMPLES / name if name.startswith("estimate_") else SAMPLES / name)),
                      platforms.detect("cpu"), specs=specs, budget=budget)


def test_a_page_size_hack_gets_no_estimate_only_the_reason():
    found = _estimate("estimate_page_size_2.py", [SMALL])
    assert found.status == "fail" and "page_size" in found.refusal and found.geomeans() is None
    record = runner.record(found)
    assert record["mode"] == "estimate" and record["status"] == "fail" and record["estimate"]["geomean"] is None


def test_a_submission_that_fails_the_check_gets_no_estimate():
    found = _estimate("wrong_output.py", [SMALL])
    assert found.status == "fail" and "fails the check" in found.refusal and found.geomeans() is None


def test_a_hip_submission_without_the_emulator_is_refused_before_anything_runs(monkeypatch):
    monkeypatch.setattr(platforms, "emulator_missing", lambda: "no clang++-22 on PATH")
    found = _estimate("hip_inline.py", [SMALL])
    assert found.status == "skip" and "HIP" in found.refusal and not any(s.recorded_kv for s in found.shapes)
    assert "no clang++-22 on PATH" in found.refusal and "clang-22 and lld-22" in found.refusal


def test_shapes_whose_recorded_calls_are_the_same_are_recorded_once_and_priced_each_at_its_length():
    said = []
    one, two = dict(SMALL, kvseqlen=256, seed=1), dict(SMALL, kvseqlen=512, seed=2)  # capped to kv 12 and 16
    found = runner.run(subs.resolve(str(ESTIMATE_SAMPLES / "estimate_nonpersistent_a16w16.py")),
                       platforms.detect("cpu"), specs=[one, two], budget=64,
                       progress=lambda done, total, label: said.append((total, label)))
    assert found.status == "pass" and [s.recorded_kv for s in found.shapes] == [[12, 16], [12, 16]]
    recording = [(total, label) for total, label in said if total is not None and label.startswith("recording")]
    assert recording and all(total == 1 for total, _ in recording)  # one recording for the two shapes
    assert any("the same calls" in label for _, label in recording)
    assert _us(found, 1) > _us(found, 0)  # the same recordings, extrapolated to each shape's own KV length
    assert [s.note for s in found.shapes] == [f"recorded at kv 12 and 16, extrapolated to {kv}" for kv in (256, 512)]


@pytest.fixture(scope="module")
def sample_estimates():
    names = ("estimate_persistent_a8w8_item.py", "estimate_persistent_a8w8.py", "estimate_nonpersistent_a16w16.py",
             "estimate_gemm_small.py")
    # 16384 rows: the large shape is recorded at kv 48 and 64, past the GEMM sample's 8192-row switch, as at 8192
    return {name.removeprefix("estimate_").removesuffix(".py"): _estimate(name, [SMALL, LARGE], budget=16384)
            for name in names}


def _us(result, index: int) -> float:
    return result.shapes[index].estimate.us


@pytest.mark.slow
def test_the_samples_get_estimates_with_breakdowns(sample_estimates):
    for result in sample_estimates.values():
        assert result.status == "pass" and result.geomeans() is not None
        for shape in result.shapes:
            assert shape.estimate.low_us < shape.estimate.us < shape.estimate.high_us
            assert sum(p.us for p in shape.estimate.priced) == pytest.approx(shape.estimate.us)
    large = sample_estimates["persistent_a8w8"].shapes[1]
    assert large.recorded_kv == [48, 64] and "extrapolated to 8192" in large.note


@pytest.mark.slow
def test_an_estimate_run_again_replays_its_recordings_and_runs_nothing(sample_estimates, monkeypatch):
    from harness.run.worker import Worker

    def refused(*args, **kwargs):
        raise AssertionError("a worker was asked: the recordings should have answered")

    monkeypatch.setattr(Worker, "call", refused)
    again = _estimate("estimate_persistent_a8w8.py", [SMALL, LARGE], budget=16384)
    first = sample_estimates["persistent_a8w8"]
    assert [_us(again, i) for i in (0, 1)] == [_us(first, i) for i in (0, 1)] and not first.replayed
    assert again.replayed.startswith("3 recorded or emulated calls replayed from the shared recordings")
    assert runner.record(again)["estimate"]["replayed"] == again.replayed


@pytest.mark.slow
def test_the_breakdown_shows_count_times_each_and_the_total_of_each_shape(sample_estimates):
    from rich.console import Console

    from harness.display import estimate as display_estimate
    from harness.results.figures import format_model_us

    result = sample_estimates["persistent_a8w8"]
    out = Console(width=300, record=True, no_color=True)
    ((table, below),) = display_estimate.estimate_breakdown(result, out.width)
    out.print(table)
    rows = {line.split("│")[2].strip(): line.split("│")[3:-2] for line in out.export_text().splitlines()
            if line.count("│") > 3}
    copies = next(p for p in result.shapes[0].estimate.priced if p.launch.name == "aten._to_copy")
    assert copies.launch.count == 2  # the cell names the count, the price of one, and the two together
    assert rows["aten._to_copy"][0].strip() == f"2 × {copies.us / 2:.3g} = {format_model_us(copies.us)}"
    totals = [cell.strip() for cell in rows["benchmark estimate"]]
    assert totals == [format_model_us(shape.estimate.us) for shape in result.shapes]


@pytest.mark.slow
def test_the_samples_differ_the_way_the_model_says(sample_estimates):
    model = sample_estimates["persistent_a8w8"].model
    item, plain = sample_estimates["persistent_a8w8_item"], sample_estimates["persistent_a8w8"]
    np16, gemm = sample_estimates["nonpersistent_a16w16"], sample_estimates["gemm_small"]
    for index in (0, 1):  # the .item() costs exactly one fitted sync, at every shape
        assert _us(item, index) - _us(plain, index) == pytest.approx(model.sync_us)
    # no quantization, metadata or reduce launches: the non-persistent a16w16 call is cheaper at small shapes,
    # and its bf16 KV (twice fp8's bytes) makes it dearer at the largest
    assert _us(np16, 0) < _us(plain, 0) and _us(np16, 1) > _us(plain, 1)
    kinds = {(p.launch.kind, p.launch.name) for p in gemm.shapes[0].estimate.priced}
    assert ("gemm", "aten.bmm") in kinds and not any(kind == "asm" for kind, _ in kinds)
    assert _us(gemm, 1) == pytest.approx(_us(np16, 1))  # above GEMM_ROWS it is the same aiter call
    # the GEMM path is fitted now (issue 29): at 4 x 1k it costs more than the non-persistent a16w16 call, as the
    # public figures say (dgavriloff v105 20.2 us against 23.8-25.7 us for kernelsanders' GEMM-path files)
    assert _us(np16, 0) < _us(gemm, 0) < _us(plain, 0)


def _estimate_record(label: str, us: float, band: tuple) -> dict:
    sub = records.SubmissionInfo(number=None, path=f"/tmp/{label}.py", sha256=label, requirements=["torch"],
                                 optional=[], numbered=False)
    figures = {"us": us, "low_us": us * band[0], "high_us": us * band[1], "ranked_us": us + 6,
               "ranked_low_us": us * band[0], "ranked_high_us": us * band[1] + 12}
    shape = dict(figures, shape=[4, 1024], breakdown=[], recorded_kv=[1024], note="", uncalibrated=[])
    return records.new_record(source="local", submission=sub, mode="estimate", cases="official", flush="none",
                              device=records.Device(name=runner.DEVICE_NAME, arch="gfx950 (model)", backend="estimate"),
                              versions={}, status="pass", reason="", results=[], warnings=[], started="2026-12-01T10:00",
                              finished="2026-12-01T10:00", estimate={"geomean": figures, "shapes": [shape],
                                                                    "recorded_on": "cpu", "scaled": True})


def test_diff_estimate_says_which_is_faster_and_whether_the_gap_beats_the_band(tmp_path):
    path = tmp_path / "ledger.jsonl"
    for record in (_estimate_record("slow", 300.0, (0.8, 1.4)), _estimate_record("fast", 100.0, (0.8, 1.4)),
                   _estimate_record("close", 280.0, (0.8, 1.4))):
        ledger.append(record, path)
    result = CliRunner().invoke(main, ["diff", "--estimate", "/tmp/slow.py", "/tmp/fast.py", "--ledger", str(path)])
    assert result.exit_code == 0, result.output
    assert "expects /tmp/fast.py to be faster" in " ".join(result.output.split()) and "larger than the band" in result.output
    close = estimates.compare(records.load(path), "/tmp/slow.py", "/tmp/close.py")
    assert not close.beyond_band and "cannot tell them apart" in estimates.verdict(close)
    missing = CliRunner().invoke(main, ["diff", "--estimate", "/tmp/slow.py", "/tmp/none.py", "--ledger", str(path)])
    assert missing.exit_code == 2 and "no MI355X estimate of submission '/tmp/none.py'" in missing.output


def test_the_scoreboard_shows_estimates_apart_from_measured_times(tmp_path):
    estimate = _estimate_record("fast", 100.0, (0.8, 1.4))
    timed = dict(estimate, mode="benchmark", device={"name": "NVIDIA H200", "arch": "sm_90", "backend": "cuda"},
                 estimate=None, results=[{"spec": SMALL, "status": "pass", "message": "", "notes": {}, "accuracy": None,
                                           "stats": {"runs": 3, "mean": 20000.0, "std": 1.0, "err": 1.0, "best": 1.0,
                                                     "worst": 1.0}}], run_id="other")
    everything = records.usable([estimate, timed])
    tables = scoreboard.build_tables(everything)
    assert [t.device for t in tables] == ["NVIDIA H200"]  # no table of estimates mixed with timings
    page = scoreboard.render_table(tables[0])
    assert estimates.COLUMN in page and "100 (80.0–140)" in page
    section = "\n".join(estimates.render_section(everything))
    assert "MI355X estimates (a cost model, not measurements)" in section and "| /tmp/fast.py | 100 |" in section
    assert scoreboard.where_verified(everything) == {}


@pytest.mark.slow
def test_the_estimate_command_prints_the_estimate_and_records_it(monkeypatch, results_dir):
    monkeypatch.setenv(runner.ROW_BUDGET_ENV, "256")
    result = CliRunner().invoke(main, ["estimate", str(ESTIMATE_SAMPLES / "estimate_nonpersistent_a16w16.py"),
                                       "--device", "cpu"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "MI355X estimate, geomean" in text and "not a measurement" in text and "benchmark mode" in text
    assert "ranked mode" in text and "breakdown" in text and "custom_kernel call" in text
    # piped: a line per recording as it starts; at 256 rows each batch's 1k and 8k make the same calls
    assert re.search(r"recording (\d+)×1024 \(and \1×8192: the same calls\).*\(0/4 done\)", result.output)
    saved = records.load(results_dir / "ledger.jsonl")
    assert [r["mode"] for r in saved] == ["estimate"] and len(saved[0]["estimate"]["shapes"]) == 8
    assert all(case["stats"] is None for case in saved[0]["results"])
    refused = CliRunner().invoke(main, ["estimate", str(ESTIMATE_SAMPLES / "estimate_page_size_2.py"), "--device", "cpu"])
    assert refused.exit_code == 1 and "no MI355X estimate" in refused.output and "page_size" in refused.output


def test_cpu_recordings_use_two_kv_lengths_never_past_the_official_one():
    assert runner.recording_lengths(4, 1024, on_gpu=False, budget=131072) == [1024]
    assert runner.recording_lengths(256, 8192, on_gpu=False, budget=131072) == [384, 512]
    assert runner.recording_lengths(256, 8192, on_gpu=False, budget=256) == [1, 2]
    assert runner.recording_lengths(1, 1, on_gpu=False, budget=1) == [1]
    assert runner.recording_lengths(256, 8192, on_gpu=True) == [8192]


def test_a_file_priced_from_its_plan_is_recorded_with_fewer_rows():
    from harness.estimate import mi355x_path
    plan = mi355x_path.PathPlan(markers=["torch.version.hip"], options={"fused": False})  # 201's kind
    assert plan.worked_out() and runner.plan_budget(plan, 131072) == runner.PLAN_ROW_BUDGET
    assert runner.plan_budget(plan, 64) == 64  # a smaller budget (the tests', $HARNESS_ESTIMATE_ROWS) stands
    assert runner.plan_budget(mi355x_path.PathPlan(), 131072) == 131072  # 014 picks its path by size


@pytest.mark.slow
def test_a_triton_kernel_is_recorded_with_its_grid_and_priced_as_uncalibrated():
    found = _estimate("triton_interpreted.py", [SMALL], budget=64)
    assert found.status == "pass", found.refusal
    priced = [p for p in found.shapes[0].estimate.priced if p.launch.kind == "triton"]
    # any file whose kernels the gfx950 emulator runs is timed from their traces (no AOT_SPECS needed)
    expected = cost.UNCALIBRATED if platforms.emulator_missing() else kernel_model.TIMELINE
    assert priced and all(not p.calibrated and expected in p.basis for p in priced)
    assert all(p.high_us >= p.us >= p.low_us > 0 for p in priced)
    assert [p.launch.name for p in priced] == ["copy_kernel grid (8,)"]  # 4 x 16 x 512 outputs, 4096 per program


def test_a_bad_row_budget_is_one_error_line(monkeypatch):
    monkeypatch.setenv(runner.ROW_BUDGET_ENV, "lots")
    result = CliRunner().invoke(main, ["estimate", "001", "--device", "cpu"])
    assert result.exit_code == 2 and "error: HARNESS_ESTIMATE_ROWS must be a positive number of KV rows" in result.output


def test_a_triton_grid_smaller_than_the_chip_gets_only_its_share_of_the_bandwidth():
    model, _ = fit.calibrated_model()
    nbytes = 64e6
    small, full = (cost.price(calib.Launch("triton", "k", bytes=nbytes, programs=programs), model)
                   for programs in (4, 1024))
    launch_us = model.fixed_us("torch:launch")  # the facts' 2 us, updated by the fit
    assert full.low_us == pytest.approx(launch_us + nbytes / 8e12 * 1e6)
    assert small.low_us - launch_us == pytest.approx((full.low_us - launch_us) * 64)  # 4 of 256 CUs busy
    assert "on 4 of 256 CUs" in small.full and cost.UNCALIBRATED in small.full
