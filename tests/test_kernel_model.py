"""The kernel model (issue 21): the main-loop parser on real gfx950 compiles of 201's kernels, the model's
arithmetic on a hand-computed example, and `harness estimate` of 201 pricing mla_fp8_kernel with its gfx950 compile."""
import dataclasses
import json
import re

import pytest
from rich.console import Console

from harness import platform as platforms, submission as subs
from harness.display import estimate as display_estimate
from harness.compile import aot, loops
from harness.estimate import calibration as calib
from harness.estimate import fit, gfx950_kernels, kernel_model, runner
from harness.estimate import model as cost

# Its module-wide fixtures run once: make test gives the whole file to one xdist worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("kernel_model")

SUBMISSION_201 = subs.resolve("201").path
KV_FP8_BYTES_PER_TOKEN = 576


@pytest.fixture(scope="module")
def module_201():
    return aot.load_module(SUBMISSION_201)


def _compile_gfx950(module, kernel: str) -> aot.KernelReport:
    spec = gfx950_kernels.choose_spec(module.AOT_SPECS, kernel)
    report = aot.compile_kernel(aot.find_kernels(module)[kernel], spec, "gfx950")
    assert report.error is None, report.error
    return report


def test_the_main_loop_of_201s_fp8_kernel_for_gfx950(module_201):
    report = _compile_gfx950(module_201, "mla_fp8_kernel")
    assert report.label == "gfx950 default: fp8 P.V, split partials"  # the first spec labelled gfx950
    loop = report.loop
    assert set(loop.matrix) == {"v_mfma_f32_16x16x128_f8f6f4", "v_mfma_f32_16x16x32_fp8_fp8"}
    assert all(n > 0 for n in loop.matrix.values())
    assert loop.valu > 100 and loop.lds > 0 and loop.scalar > 0
    # 4 waves of 64 lanes load one 32-token tile of fp8 KV per iteration, each byte once
    assert loop.load_bytes_per_lane * 64 * report.num_warps == 32 * KV_FP8_BYTES_PER_TOKEN
    assert f"{loop.valu} VALU" in loop.summary() and "v_mfma_f32_16x16x32_fp8_fp8" in loop.summary()


def test_the_main_loop_of_201s_mxfp4_kernel_names_its_scaled_mfma(module_201):
    loop = _compile_gfx950(module_201, "mla_mxfp4_kernel").loop
    # Q enters the scaled MFMA as fp8, so it is the 32-cycle form, not the "(fp4/fp6)" one
    assert set(loop.matrix) == {"v_mfma_scale_f32_16x16x128_f8f6f4", "v_mfma_f32_16x16x32_bf16"}
    assert loop.valu > 100 and loop.load_bytes_per_lane > 0


def test_the_loop_parser_reads_an_objdump_listing_by_address():
    listing = """
0000000000001000 <kern>:
\ts_load_dwordx2 s[0:1], s[4:5], 0x0                   // 000000001000:
\tv_add_u32_e32 v1, v2, v3                              // 000000001008:
\tglobal_load_dwordx4 v[4:7], v[0:1], off               // 00000000100C:
\tv_mfma_f32_16x16x128_f8f6f4 v[8:11], v[4:11], v[4:11], v[8:11] cbsz:4 blgp:4 // 000000001014:
\tds_read_b128 v[12:15], v1                             // 000000001024:
\tds_write_b8_d16_hi v1, v2                             // 000000001028:
\ts_cbranch_scc1 65529                                  // 00000000102C: <kern+0x8>
\ts_endpgm                                              // 000000001030:
"""
    found = loops.from_objdump(listing)["kern"]
    assert found.back_edges == ((1, 6),)
    loop = loops.main_loop(found)
    # ds_write_b8_d16_hi writes 1 byte per lane: the first size word of the name counts
    assert (loop.valu, loop.lds, loop.lds_bytes_per_lane, loop.loads, loop.scalar) == (1, 2, 16 + 1, {16: 1}, 1)
    assert loop.matrix == {"v_mfma_f32_16x16x128_f8f6f4 (fp4/fp6)": 1}  # both operands fp4: the 16-cycle form


def _kernel(valu: int, matrix: dict, waves_per_simd: int) -> kernel_model.CompiledKernel:
    loop = loops.LoopFigures(instructions=valu + 2, valu=valu, matrix=matrix, lds=0, lds_bytes_per_lane=0,
                             loads={16: 1}, stores=0, scalar=1, other=0, first=0, last=valu + 1)
    return kernel_model.CompiledKernel(name="k", label="test", loop=loop, waves=4, waves_per_simd=waves_per_simd)


def test_the_loop_summary_names_its_loads_or_says_there_are_none():
    loop = _kernel(100, {"v_mfma_f32_16x16x32_fp8_fp8": 2}, 2).loop
    assert loop.summary() == ("loop per wave per iteration: 100 VALU, 2x v_mfma_f32_16x16x32_fp8_fp8, 0 LDS, "
                              "loads 1x16 B/lane, 1 scalar")
    empty = dataclasses.replace(loop, loads={}, matrix={})
    assert empty.summary().endswith("no MFMA, 0 LDS, no memory loads, 1 scalar")


def test_the_kernel_model_on_a_hand_computed_example():
    """512 programs of 4 waves; 16 B per lane per iteration = 4096 B per program; 1e5 iterations. A wave's iteration:
    100 VALU x 4 + 2 MFMA x 16 = 432 cycles (low end, co-executed: 400). 1024 SIMDs busy at 2.4 GHz:
    1e5 x 4 x 432 / 1024 / 2.4e9 = 70.3125 us of instructions; 409.6 MB at 8 TB/s = 51.2 us."""
    costs = kernel_model.load_costs()
    nbytes, slow = 4096 * 1e5, 3.5e12
    two = kernel_model.price(nbytes, 512, _kernel(100, {"v_mfma_f32_16x16x32_fp8_fp8": 2}, 2), costs, 8e12, slow, 256)
    assert two.bytes_us == pytest.approx(51.2) and two.instructions_us == pytest.approx(70.3125)
    assert two.us == pytest.approx(70.3125)  # 2 waves per SIMD: the larger of the two
    assert two.low_us == pytest.approx(65.10416667)  # 1e5 x 4 x 400 / 1024 / 2.4e9
    assert two.high_us == pytest.approx(409.6e6 / slow * 1e6 + 70.3125)
    one = kernel_model.price(nbytes, 512, _kernel(100, {"v_mfma_f32_16x16x32_fp8_fp8": 2}, 1), costs, 8e12, slow, 256)
    assert one.us == pytest.approx(51.2 + 70.3125) and "one wave per SIMD hides nothing" in one.basis
    # 4 programs keep 4 CUs busy: 1/64 of the bandwidth, 16 SIMDs
    few = kernel_model.price(4096 * 1000, 4, _kernel(100, {}, 2), costs, 8e12, slow, 256)
    assert few.bytes_us == pytest.approx(4096e3 / (8e12 / 64) * 1e6)
    assert few.instructions_us == pytest.approx(1000 * 4 * 400 / 16 / 2.4e9 * 1e6)


def test_an_mfma_without_a_cycle_figure_is_named_and_widens_the_band():
    costs = kernel_model.load_costs()
    known = kernel_model.price(4096e5, 512, _kernel(10, {"v_mfma_f32_16x16x32_f16": 8}, 2), costs, 8e12, 3.5e12, 256)
    unknown = kernel_model.price(4096e5, 512, _kernel(10, {"v_mfma_f32_4x4x4_16b_f16": 8}, 2), costs, 8e12, 3.5e12,
                                 256)
    assert "no cycle figure for v_mfma_f32_4x4x4_16b_f16" in unknown.basis and "no cycle figure" not in known.basis
    assert unknown.high_us / unknown.low_us > known.high_us / known.low_us


def test_every_kernel_model_figure_names_its_source():
    figures = json.loads(calib.DATA_FILE.read_text())["kernel_model"]
    sourced = [entry for entry in figures.values() if isinstance(entry, dict)]
    assert len(sourced) == 6  # clock, SIMDs, wave size, VALU cycles, MFMA cycles, co-execution
    for entry in sourced:
        assert entry["source"]["repo"] and entry["source"]["path"] and entry["source"]["commit"], entry
    costs = kernel_model.load_costs()
    assert costs.clock_hz == 2.4e9 and costs.valu_cycles == 4 and costs.mfma_cycles["v_mfma_f32_16x16x128_f8f6f4"] == 32


@pytest.mark.slow
def test_estimate_of_201_prices_its_triton_kernel_with_the_gfx950_compile(estimate_201_small):
    result = estimate_201_small
    assert result.status == "pass", result.refusal
    modelled = [p for p in result.shapes[0].estimate.priced if p.launch.kernel == "mla_fp8_kernel"]
    assert modelled and all(not p.calibrated for p in modelled)
    for priced in modelled:
        assert cost.UNCALIBRATED in priced.full and "'gfx950 default: fp8 P.V, split partials'" in priced.full
        if kernel_model.TIMELINE in priced.full:  # traced on the emulator: its band moves the bandwidth alone
            assert priced.low_us <= priced.us <= priced.high_us
            continue
        # the kernel model's band is wider than the byte-only price of the same launch
        bytes_only = cost.price(priced.launch, result.model)
        assert priced.high_us / priced.low_us > bytes_only.high_us / bytes_only.low_us
    # issue 29: the CPU cannot show 201's MI355X path, so the launches are its ROCm options' on 256 CUs
    assert any("picks its path by platform" in w and "cannot show the MI355X path" in w for w in result.warnings)
    assert [p.launch.name for p in modelled] == ["mla_fp8_kernel grid (8, 4) [gfx950 plan]"]
    record = runner.record(result)
    lines = record["estimate"]["shapes"][0]["breakdown"]
    assert any("kernel model, uncalibrated: gfx950 compile" in line["basis"] for line in lines)
    console = Console(record=True, width=240)
    display_estimate.print_estimate(console, result)
    text = " ".join(console.export_text().split())  # the kernel's line may wrap
    assert "kernel model, uncalibrated" in text and "gfx950 default: fp8 P.V, split partials" in text


def repeated_clauses(lines: list) -> list:
    """Clauses (between ';' or ': ') of 25 characters or more that more than one line says."""
    seen: dict = {}
    for line in lines:
        for clause in {part.strip() for part in re.split(r"; |: ", line)}:
            if len(clause) >= 25:
                seen[clause] = seen.get(clause, 0) + 1
    return [clause for clause, n in seen.items() if n > 1]


@pytest.mark.slow
def test_201s_printed_estimate_says_each_method_once_and_no_clause_twice(estimate_201_small):
    console = Console(record=True, width=160)
    display_estimate.print_estimate(console, estimate_201_small)
    flat = " ".join(console.export_text().split())
    method = kernel_model.STATIC_METHOD if platforms.emulator_missing() else kernel_model.TIMELINE
    assert flat.count(method) == 1, flat  # both kernels priced one way: the method once
    lines = display_estimate.basis_lines(estimate_201_small.shapes)
    # the timing model's breakdown says each launch's schedule and bytes (two launches may share them), in
    # one line of ~750 characters a kernel
    schedule = {"256 CUs in 8 XCDs, the busiest CU runs 1 in 1 round(s)", "reuse across workgroups not told apart)"}
    assert set(repeated_clauses(lines)) <= schedule and all(len(line) < 900 for line in lines), lines
    figures = [line for line in lines if line.startswith("    4×1024 ")]
    assert len(figures) == 2 and all(len(line) < 200 for line in figures)  # one short line per launch


def test_a_kernel_without_a_gfx950_compile_keeps_its_byte_price_and_says_why(tmp_path):
    module = aot.load_module(SUBMISSION_201)  # a trusted file: compiled in this process
    kernels = gfx950_kernels.Gfx950Kernels(
        lambda names: aot.compile_module(module, "gfx950", only=names, preferred=True))
    assert kernels.get("mla_fp8_gluon_kernel") is None
    assert "no AOT_SPECS entry" in kernels.why_not("mla_fp8_gluon_kernel")
    model, _ = fit.calibrated_model()
    launch = calib.Launch("triton", "mla_fp8_gluon_kernel grid (8, 4)", bytes=1e6, programs=32,
                          kernel="mla_fp8_gluon_kernel")
    priced = cost.price(launch, model, kernels)
    assert cost.UNCALIBRATED in priced.full and "no AOT_SPECS entry" in priced.full
    assert not priced.kernel_model
    # The warning names only what the kernel model priced: the Triton kernel, not the Gluon kernel (whose basis says
    # "no gfx950 compile"; the H200 run of 2026-12-01 named it as priced when the warning matched on that text).
    modelled = cost.price(calib.Launch("triton", "mla_fp8_kernel grid (1, 4)", bytes=1e6, programs=4,
                                       kernel="mla_fp8_kernel"), model, kernels)
    assert modelled.kernel_model
    shape = runner.ShapeRun(spec={}, estimate=cost.ShapeEstimate((4, 1024), 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
                                                                  priced=[priced, modelled]))
    (warning,) = runner._kernel_model_warnings([shape], platforms.detect())
    assert "prices mla_fp8_kernel from gfx950 compiles" in warning


def test_the_kernels_a_plan_names_are_compiled_in_one_call_and_each_kernel_once():
    asked = []

    def reports(names):
        asked.append(list(names))
        return [aot.KernelReport(kernel=name, label="", target="gfx950", skipped=True) for name in names
                if name != "other"]

    kernels = gfx950_kernels.Gfx950Kernels(reports)
    kernels.prefetch(["split", "merge", "split"])
    assert kernels.get("merge") is None and kernels.get("other") is None
    assert asked == [["split", "merge"], ["other"]]  # one worker for the plan's two, one for the late one
    assert "no AOT_SPECS entry" in kernels.why_not("split")
    assert "not a @triton.jit kernel" in kernels.why_not("other")  # no report came back for it
