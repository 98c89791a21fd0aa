"""Issue 29: a file that picks its path by platform is priced on the path it would take on the MI355X (201),
or says that this machine cannot show it (200)."""
import pytest

from harness import platform as platforms, submission as subs
from harness.compile import aot
from harness.estimate import calibration as calib
from harness.estimate import executed, kernel_model, mi355x_path, runner
from harness.run import persona

# One xdist group with test_kernel_model: both read conftest's estimate_201_small, made once per worker.
pytestmark = pytest.mark.xdist_group("kernel_model")

SHAPES = [(4, 8192), (256, 8192)]


def plan_of(number: str, recorded_on_gfx950: bool) -> mi355x_path.PathPlan:
    """The plan as the estimate reads it, the worker's answer computed here (these are trusted files)."""
    path = subs.resolve(number).path
    return mi355x_path.read(path, recorded_on_gfx950,
                            lambda: persona.rocm_plan(aot.load_module(path), SHAPES, calib.CUS))


def test_201s_mi355x_plan_is_its_rocm_options_on_256_cus():
    plan = plan_of("201", False)
    assert plan.worked_out() and "torch.version.hip" in plan.markers
    # gfx950 options from platform_defaults: 32-token tiles, fp8 P.V, 2 programs per CU (not the CPU's 1)
    assert (plan.options["block_n"], plan.options["programs_per_cu"]) == (32, 2)
    assert plan.splits(4, 8192) == 64 and plan.splits(256, 8192) == 2  # a CPU's 4 "CUs" would choose others
    found = plan.launches([calib.Launch("triton", "mla_fp8_gluon_kernel grid (1, 4)", bytes=1.0,
                                        kernel="mla_fp8_gluon_kernel"), calib.Launch("alloc", "torch.empty")], 4, 8192)
    names = [launch.name for launch in found]
    assert names == ["torch.empty", "mla_fp8_kernel grid (64, 4) [gfx950 plan]",
                     "mla_merge_kernel grid (4, 16) [gfx950 plan]"]  # the recorded Gluon launch is gone
    split = found[1]
    assert split.programs == 256 and split.bytes > 4 * 8192 * 576  # the fp8 KV, Q and the partials


def test_a_gfx950_recording_is_taken_as_it_is():
    plan = plan_of("201", True)
    assert not plan.worked_out() and not plan.markers and plan.warnings("MI355X") == []


def test_a_file_without_201s_convention_says_this_machine_cannot_show_its_path():
    plan = plan_of("200", False)
    assert not plan.worked_out() and plan.markers
    (warning,) = plan.warnings("cpu")
    assert "cannot show the MI355X path" in warning and "prices the path taken here" in warning


@pytest.mark.slow
def test_estimate_201_on_the_cpu_names_only_gfx950_kernels(estimate_201_small):
    result = estimate_201_small
    assert result.status == "pass", result.refusal
    triton = [p for p in result.shapes[0].estimate.priced if p.launch.kind == "triton"]
    assert [p.launch.name for p in triton] == ["mla_fp8_kernel grid (8, 4) [gfx950 plan]",
                                               "mla_merge_kernel grid (4, 16) [gfx950 plan]"]
    assert "gfx950 default: fp8 P.V, split partials" in triton[0].full and triton[0].kernel_model
    assert not any("gluon" in p.launch.name for p in result.shapes[0].estimate.priced)
    if platforms.emulator_missing():  # no HIP toolchain: the static count, and why
        assert all("not from executed counts: the gfx950 emulator cannot run here" in p.full for p in triton)
        return
    # both kernels timed from their traces on the gfx950 emulator (5 calls at batch 1-2), 8 splits of 4 tiles
    for priced in triton:
        assert priced.full.startswith(f"launch (facts) + {kernel_model.TIMELINE}") and priced.kernel_model
    assert "near 4 KV tiles per program" in triton[0].full and "near 8 splits per program" in triton[1].full
    assert "replaces the static count (kernel model, uncalibrated: gfx950 compile of AOT_SPECS" in triton[0].full
    assert "through 5 emulated calls" in triton[0].full and "through 3 emulated calls" in triton[1].full
    lines = runner.record(result)["estimate"]["shapes"][0]["breakdown"]
    assert sum(kernel_model.TIMELINE in line["basis"] for line in lines) == 2


@pytest.mark.slow
def test_without_the_emulator_201_keeps_its_static_count_and_says_why(monkeypatch, estimate_201_small):
    monkeypatch.setenv(executed.SWITCH_ENV, "0")
    small = {"batchsize": 4, "qseqlen": 1, "kvseqlen": 1024, "seed": 4217}
    result = runner.run(subs.resolve("201"), platforms.detect("cpu"), specs=[small], budget=64)
    # the fixture's run recorded the same two calls (kv 12 and 16): replayed, not interpreted again
    assert result.replayed.startswith("2 recorded or emulated calls replayed"), result.replayed
    split, merge = [p for p in result.shapes[0].estimate.priced if p.launch.kind == "triton"]
    assert "kernel model, uncalibrated: gfx950 compile of the kernel's AOT_SPECS" in split.full and split.kernel_model
    assert kernel_model.EXECUTED not in split.full + merge.full
    for priced in (split, merge):
        assert f"not from executed counts: emulated calls turned off ({executed.SWITCH_ENV}=0)" in priced.full
