"""The gfx950 timing model on hand-built traces whose times are worked out by hand below
(memory latency 790, VALU 4, MFMA 16x16x32 bf16: 8 cycles on the VALU port, 16 on the XDL
unit, 4 cycles at least per instruction), and its figures file against docs/ESTIMATE.md."""
import json
import re
import time

import numpy as np
import pytest

from harness.emulator.trace import KernelResources, LaunchTrace, WaveTrace, load
from harness.estimate import gfx950_instructions as instructions, gfx950_timeline as timeline
from helpers import REPO

# the hand-worked times below assume the free figures' starting values, not the fitted ones in the file
HAND = {"memory_latency_cycles": 790.0, "clock_hz": 2.4e9, "hbm_bytes_per_second": 6.02e12, "launch_gap_us": 2.0}
FILE_FIGURES = timeline.load_figures
FIGURES = FILE_FIGURES(HAND)
CLOCK = FIGURES["clock_hz"]
GAP = FIGURES["launch_gap_us"]


@pytest.fixture(autouse=True)
def hand_figures(monkeypatch):
    """Every price here at HAND (a test's own overrides on top)."""
    def at_hand(overrides=None, **where):
        return FILE_FIGURES({**HAND, **(overrides or {})}, **where)
    monkeypatch.setattr(timeline, "load_figures", at_hand)
ENDPGM = ("s_endpgm", "")


def traced(instructions, waves, grid=(1, 1, 1), vgprs=32, lds=0, lanes=64):
    """A launch whose every workgroup runs `waves` (lists of instruction indices)."""
    resources = KernelResources(vgprs, 0, 16, lds, len(waves))
    trace = LaunchTrace("hand", grid, (64 * len(waves), 1, 1), resources, instructions)
    trace.workgroups[(0, 0, 0)] = [WaveTrace(np.array(w, np.int32), np.full(len(w), lanes, np.uint8))
                                   for w in waves]
    return trace


def us(cycles):
    return cycles / CLOCK * 1e6


def test_a_load_then_its_wait_costs_the_memory_latency():
    code = [("global_load_dword", "v1, v[2:3], off"), ("s_waitcnt", "vmcnt(0)"), ("v_add_f32_e32", "v1, v1, v1"),
            ENDPGM]
    trace = traced(code, [[0, 1, 2, 3]])
    priced = timeline.price_launch(trace)
    # load issues at 0, done at 790; the wait arrives at 4 and ends at 790; then 3 x 4 cycles
    assert priced.bound == "latency"
    assert priced.parts["latency"] == pytest.approx(us(790 + 12))
    assert priced.microseconds == pytest.approx(GAP + us(802))
    assert "1 memory round trips (vmcnt) x" in priced.lines[2]
    slower = timeline.price_launch(trace, timeline.load_figures({"memory_latency_cycles": 1000}))
    assert slower.parts["latency"] == pytest.approx(us(1012))


def test_a_wait_for_all_but_one_waits_for_the_oldest_load_only():
    code = [("global_load_dword", "v1, v[2:3], off"), ("global_load_dword", "v4, v[2:3], off"),
            ("s_waitcnt", "vmcnt(1)"), ("v_add_f32_e32", "v1, v1, v1"), ("s_waitcnt", "vmcnt(0)"), ENDPGM]
    priced = timeline.price_launch(traced(code, [[0, 1, 2, 3, 4, 5]]))
    # first wait: arrives at 8, the first load is done at 790; the wait and v_add reach 798,
    # after the second load (4 + 790 = 794): no second stall; s_endpgm ends at 806
    assert priced.parts["latency"] == pytest.approx(us(806))
    assert "1 memory round trips" in priced.lines[2]


def test_memory_widths_by_mnemonic_and_cache_maintenance_moves_nothing():
    widths = {"buffer_load_dword": 4, "global_load_dwordx4": 16, "ds_read_b64_tr_b16": 8, "ds_read2st64_b64": 16,
              "ds_write_b8": 1, "global_load_short_d16": 2, "s_load_dwordx8": 32, "global_atomic_add_f64": 8}
    assert {m: instructions.operand_width(m) for m in widths} == widths
    table = instructions.classify([("buffer_wbl2", "sc1"), ("buffer_inv", "sc1"), ("buffer_load_dword", "v1, s[0:3]")],
                              FIGURES)
    assert table.width.tolist() == [0, 0, 4] and table.hbm.tolist() == [False, False, True]
    assert table.counter.tolist() == [instructions.VM] * 3


def test_the_raw_waitcnt_immediate_decodes_as_gfx9_packs_it():
    assert instructions.waitcnt_counts("0x3f70") == (0, instructions.NO_WAIT, instructions.NO_WAIT)
    assert instructions.waitcnt_counts("vmcnt(3) lgkmcnt(0)") == (3, 0, instructions.NO_WAIT)


def test_a_valu_op_reading_the_one_before_waits_for_its_result():
    chain = [("v_fma_f32", "v1, v1, v2, v3")] * 10 + [ENDPGM]  # each reads the v1 the one before wrote
    apart = [("v_fma_f32", "v1, v2, v3, v4")] * 10 + [ENDPGM]
    dependent = timeline.price_launch(traced(chain, [list(range(11))]))
    assert dependent.parts["latency"] == pytest.approx(us(9 * 8 + 4 + 4))
    assert timeline.price_launch(traced(apart, [list(range(11))])).parts["latency"] == pytest.approx(us(44))
    pairs = [("v_mov_b32_e32", "v[4:7], v0"), ("v_cmp_gt_f32_e32", "vcc, v6, v9"), ("v_add_f32_e64", "v9, -v2, |v3|")]
    table = instructions.classify(pairs, FIGURES)
    assert table.reads_what_wrote(0, 1) and not table.reads_what_wrote(1, 2)  # v6 in v[4:7]; vcc no VGPR
    assert instructions.reads_previous(np.array([0, 1, 2, 0]), table).tolist() == [False, True, False, False]


def test_independent_valu_on_two_waves_a_simd_is_issue_bound():
    code = [("v_add_f32_e32", "v1, v2, v3")] * 100 + [ENDPGM]
    wave = list(range(101))
    one = timeline.price_launch(traced(code, [wave]))
    assert one.bound == "latency" and one.parts["latency"] == pytest.approx(us(404))
    eight = timeline.price_launch(traced(code, [wave] * 8))  # 2 waves on each SIMD share its VALU
    assert eight.bound == "issue"
    assert eight.parts["issue"] == pytest.approx(us(800))
    assert eight.microseconds == pytest.approx(GAP + us(800))
    assert "of issue: VALU 99%, branch 1%" in eight.lines[3]  # 400 of 404 cycles


def test_four_waves_at_a_barrier_resume_at_the_last_arrival():
    code = [("v_add_f32_e32", "v1, v2, v3"), ("s_barrier", ""), ENDPGM]
    waves = [[0] * (10 * k) + [1] + [0] * 5 + [2] for k in range(4)]
    priced = timeline.price_launch(traced(code, waves))
    # the last wave arrives at 120; all resume there: barrier 4 + 5 VALU 20 + s_endpgm 4
    assert priced.parts["latency"] == pytest.approx(us(148))
    assert "barriers" in priced.lines[2]


def test_an_mfma_chain_runs_at_the_xdl_rate_and_hides_valu_between():
    mfma = ("v_mfma_f32_16x16x32_bf16", "v[0:3], v[4:7], v[8:11], v[0:3]")
    code = [mfma, ("v_add_f32_e32", "v20, v21, v22"), ENDPGM]
    chain = timeline.price_launch(traced(code, [[0] * 10 + [2]]))
    assert chain.parts["latency"] == pytest.approx(us(10 * 16))  # the last MFMA's tail covers s_endpgm
    covered = timeline.price_launch(traced(code, [[0, 1, 1] * 10 + [2]]))
    assert covered.parts["latency"] == pytest.approx(us(9 * 16 + 8 + 8 + 4))  # 2 VALU in each shadow
    spilled = timeline.price_launch(traced(code, [[0, 1, 1, 1] * 10 + [2]]))
    assert spilled.parts["latency"] == pytest.approx(us(10 * 20 + 4))  # 3 VALU outlast the MFMA


def test_f8f6f4_takes_half_the_passes_without_an_fp8_operand():
    figures, name = FIGURES, "v_mfma_scale_f32_16x16x128_f8f6f4"
    assert instructions.mfma_passes(name, "v[0:3], v[4:11], v[12:19], v[0:3]", figures) == (8.0, False)
    assert instructions.mfma_passes(name, "v[0:3], v[4:7], v[8:11], v[0:3] cbsz:4 blgp:4", figures) == (4.0, False)
    assert instructions.mfma_passes(name, "v[0:3], v[4:7], v[8:11], v[0:3] cbsz:4 blgp:0", figures) == (8.0, False)
    assert instructions.mfma_passes("v_mfma_f32_32x32x4_2b_f16", "", figures) == (8.0, True)


def test_halving_resident_waves_by_vgprs_doubles_the_rounds():
    code = [("global_load_dword", "v1, v[2:3], off"), ("s_waitcnt", "vmcnt(0)"), ENDPGM]
    grid = (256 * 32, 1, 1)  # 32 one-wave workgroups a CU: one round at 8 waves a SIMD
    full = timeline.price_launch(traced(code, [[0, 1, 2]], grid, vgprs=64, lanes=1))
    half = timeline.price_launch(traced(code, [[0, 1, 2]], grid, vgprs=128, lanes=1))
    assert full.bound == half.bound == "latency"
    assert full.parts["latency"] == pytest.approx(us(798))
    assert half.parts["latency"] == pytest.approx(2 * us(798))
    assert "32 a CU at once" in full.lines[0] and "16 a CU at once" in half.lines[0]
    assert "in 2 round(s)" in half.lines[0]
    assert timeline.residency(KernelResources(32, 0, 16, 80 * 1024, 4), FIGURES) == (2, "81,920 B of LDS, "
                                                                                        "4 waves a workgroup")


def test_bytes_over_the_achieved_bandwidth_bound_a_streaming_launch():
    code = [("buffer_load_dwordx4", "v[0:3], v4, s[0:3], 0 offen"), ("s_waitcnt", "vmcnt(0)"), ENDPGM]
    grid = (256 * 1000, 1, 1)
    priced = timeline.price_launch(traced(code, [[0] * 16 + [1, 2]], grid))
    nbytes = 16 * 64 * 16 * grid[0]
    assert priced.bound == "bandwidth"
    assert priced.parts["bandwidth"] == pytest.approx(nbytes / FIGURES["hbm_bytes_per_second"] * 1e6)
    assert priced.microseconds == pytest.approx(GAP + priced.parts["bandwidth"])
    assert "1 of 256,000 workgroups traced" in priced.lines[0]


def test_a_saved_trace_prices_as_the_original(tmp_path):
    code = [("ds_read_b128", "v[0:3], v4"), ("s_waitcnt", "lgkmcnt(0)"), ENDPGM]
    trace = traced(code, [[0, 1, 2]] * 4)
    trace.save(tmp_path / "t.npz")
    again = timeline.price_launch(load(tmp_path / "t.npz"))
    # ds_read_b128 issues in 4 cycles; its 1024 B through a 64 B/clock port = 16 cycles, then 69 cycles
    # of LDS latency: the wait ends at 85, then s_waitcnt and s_endpgm
    assert again.parts == timeline.price_launch(trace).parts
    assert again.parts["latency"] == pytest.approx(us(16 + 69 + 4 + 4))


def figure_problems(data: dict) -> list:
    """Every figure needs a value (or table), a unit, and a source that resolves (or "fit" with a start)."""
    sources, problems = data["sources"], []
    for name, entry in data["figures"].items():
        if "value" not in entry and "values" not in entry:
            problems.append(f"{name}: no value")
        if not entry.get("unit"):
            problems.append(f"{name}: no unit")
        tag = entry.get("start") if entry.get("source") == "fit" else entry.get("source")
        found = sources.get(tag) or {}
        if not (found.get("url") or all(found.get(k) for k in ("repo", "path", "commit"))):
            problems.append(f"{name}: source {tag!r} does not resolve")
    return problems


def test_every_figure_has_a_value_a_unit_and_a_source():
    data = json.loads(timeline.FIGURES_FILE.read_text())
    assert figure_problems(data) == []
    fitted = {name for name, entry in data["figures"].items() if entry["source"] == "fit"}
    assert fitted == set(timeline.FREE_FIGURES)
    data["figures"]["valu_cycles"].pop("source")
    assert figure_problems(data) == ["valu_cycles: source None does not resolve"]


def figure_rows(data: dict) -> list:
    """A row per figure, a row per entry of a table figure (MFMA passes)."""
    rows = []
    for name, entry in data["figures"].items():
        source = entry["source"] if entry["source"] != "fit" else f"fit (start: {entry['start']} {entry['start_value']:g})"
        values = {f"`{name}`": entry["value"]} if "value" in entry else {
            f"`{name}` {key}": value for key, value in entry["values"].items()}
        rows += [f"| {label} | {value:g} | {entry['unit']} | {source} |" for label, value in values.items()]
    return rows


def test_docs_list_every_figure_as_the_data_file_has_it():
    data = json.loads(timeline.FIGURES_FILE.read_text())
    docs = (REPO / "docs" / "ESTIMATE.md").read_text()
    section = docs.split("## Timing model", 1)[1].split("\n## ", 1)[0]
    listed = [line for line in section.splitlines() if re.match(r"\| `", line)]
    assert listed == figure_rows(data)


def test_a_million_steps_price_in_well_under_a_second():
    mfma = ("v_mfma_f32_16x16x32_bf16", "v[0:3], v[4:7], v[8:11], v[0:3]")
    code = [("buffer_load_dwordx4", "v[0:3], v4, s[0:3], 0 offen"), ("ds_read_b128", "v[0:3], v4"),
            ("s_waitcnt", "vmcnt(1) lgkmcnt(0)"), mfma, ("v_add_f32_e32", "v1, v2, v3"), ("s_barrier", ""), ENDPGM]
    body = [0, 1, 3, 4, 4, 3, 4, 2, 3, 4, 4, 4] * 20 + [5]  # 241 steps: 40 waits, 1 barrier
    trace = traced(code, [body * 1037 + [6]] * 4)  # 4 waves x 250k steps
    started = time.perf_counter()
    priced = timeline.price_launch(trace, timeline.load_figures({"clock_hz": 2.1e9}))
    assert time.perf_counter() - started < 5.0  # 0.5-0.85 s measured; room for a busy 2-core machine
    assert priced.microseconds > GAP


def test_a_hip_kernel_with_traces_is_priced_by_the_timeline_extrapolated_in_kv(tmp_path):
    from harness.estimate import fit, hip_launches, kernel_model, model as cost
    code = [("global_load_dword", "v1, v[2:3], off"), ("s_waitcnt", "vmcnt(0)"), ENDPGM]
    summaries = []
    for kv, wave in ((32, [0, 1, 2]), (64, [0, 0, 1, 2])):  # 798 cycles at kv 32, 802 at kv 64
        paths = []
        for call in range(2):  # the request's two calls
            path = tmp_path / f"k{kv}-{call}.npz"
            traced(code, [wave], grid=(8, 1, 1), lanes=1).save(path)
            paths.append(str(path))
        counts = {"workgroups": 16, "waves_per_workgroup": 1, "by_class.VALU": 2 * kv,
                  "bytes.global_load": 2 * 8 * kv}
        summaries.append((kv, hip_launches.one_call({"_Z1kv": {"launches": 2, "counts": counts,
                                                               hip_launches.TRACES: paths}})[0]))
    found, why = hip_launches.launches(summaries, 4, 8192)
    assert why == "" and [length for length, _ in found[0].fit.traced] == [32, 64]
    priced = kernel_model.price_traced(found[0].fit, 8e12, 1e12)
    assert priced.us == pytest.approx(us(802 + 4 * (8192 - 64) / 32))  # 4 cycles more per 32 KV rows
    assert "extrapolated to kv 8192" in priced.figures and "latency-bound" in priced.figures
    model, _ = fit.calibrated_model()
    row = cost.price(found[0], model, shape=(4, 8192))
    assert row.basis.endswith(kernel_model.TIMELINE)  # HAND gives every free figure
    assert "1 of 8 workgroups traced" in row.detail
    untraced = [(kv, {"_Z1kv": dict(s["_Z1kv"], traces=[])}) for kv, s in summaries]
    assert not hasattr(hip_launches.launches(untraced, 4, 8192)[0][0].fit, "traced")


def test_bytes_the_caller_knows_replace_the_traced_ones_scaled():
    code = [("buffer_load_dwordx4", "v[0:3], v4, s[0:3], 0 offen"), ("s_waitcnt", "vmcnt(0)"), ENDPGM]
    trace = traced(code, [[0] * 16 + [1, 2]], (256 * 1000, 1, 1))
    given = timeline.price_launch(trace, nbytes=1e9)
    assert given.parts["bandwidth"] == pytest.approx(1e9 / FIGURES["hbm_bytes_per_second"] * 1e6)
    assert "1e+03 MB (given)" in given.lines[4]
    assert "scaled to the grid" in timeline.price_launch(trace).lines[4]


def test_bytes_are_the_distinct_lines_a_workgroup_touched_when_the_trace_has_them():
    code = [("global_load_dwordx4", "v[0:3], v[4:5], off"), ("s_waitcnt", "vmcnt(0)"), ENDPGM]
    trace = traced(code, [[0, 1, 0, 1, 2]] * 4, grid=(512, 1, 1))  # 4 waves x 2 loads x 64 lanes x 16 B
    every = timeline.price_launch(trace)
    assert every.parts["bandwidth"] == pytest.approx(4 * 2 * 64 * 16 * 512 / FIGURES["hbm_bytes_per_second"] * 1e6)
    assert "every access counted" in every.lines[4]
    trace.unique_lines = {(0, 0, 0): 16}  # the four waves read the same 2 KiB: 16 lines of 128 bytes
    once = timeline.price_launch(trace)
    assert once.parts["bandwidth"] == pytest.approx(16 * 128 * 512 / FIGURES["hbm_bytes_per_second"] * 1e6)
    assert "distinct 128-byte lines" in once.lines[4]


def test_a_kernel_cheaper_at_the_longer_recorded_kv_is_not_extrapolated_downwards(tmp_path):
    from harness.estimate import hip_launches, kernel_model
    code = [("global_load_dword", "v1, v[2:3], off"), ("s_waitcnt", "vmcnt(0)"), ENDPGM]
    summaries = []
    for kv, wave in ((32, [0, 0, 1, 2]), (64, [0, 1, 2])):  # 802 cycles at kv 32, 798 at kv 64
        path = tmp_path / f"k{kv}.npz"
        traced(code, [wave], grid=(8, 1, 1), lanes=64).save(path)
        counts = {"workgroups": 8, "waves_per_workgroup": 1, "by_class.VALU": kv, "bytes.global_load": 8 * kv}
        summaries.append((kv, hip_launches.one_call({"_Z1kv": {"launches": 1, "counts": counts,
                                                               hip_launches.TRACES: [str(path)]}})[0]))
    found, _ = hip_launches.launches(summaries, 4, 8192)
    priced = kernel_model.price_traced(found[0].fit, 8e12, 1e12)
    assert priced.us == pytest.approx(us(798))  # compute held at kv 64's; the bytes stay far below it
    assert priced.us > 0 and "extrapolated to kv 8192" in priced.figures
