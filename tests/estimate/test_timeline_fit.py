"""The fit of the gfx950 timing model's free figures (harness/estimate/timeline_fit.py) on small
hand-built traces whose times the model itself makes at known figures, and the host part of the
real data file's figures."""
import numpy as np
import pytest

from harness.emulator.trace import KernelResources, LaunchTrace, WaveTrace
from harness.estimate import calibration as calib
from harness.estimate import timeline_fit as tf
from harness.estimate import validation
from harness.estimate.aiter_traces import Stage1
from harness.estimate.gfx950_timeline import load_figures, price_launch

LISTING = [("global_load_dwordx4", "v[0:3], v[4:5], off"), ("s_waitcnt", "vmcnt(0)"),
           ("v_add_f32_e32", "v1, v2, v3"), ("s_endpgm", "")]
TRUE = {"hbm_bytes_per_second": 4.0e12, "memory_latency_cycles": 1400.0, "clock_hz": 2.0e9,
        "launch_gap_us": 3.0}
# (loads, VALU per load, workgroups): latency-, issue- and bandwidth-bound launches
KINDS = [(4, 2, 256), (6, 400, 256), (32, 2, 8192), (2, 1, 64), (12, 40, 1024)]


def synthetic(loads: int, adds: int, grid: int) -> LaunchTrace:
    steps = np.array([k for _ in range(loads) for k in [0, 1] + [2] * adds] + [3], np.int32)
    waves = [WaveTrace(steps, np.full(len(steps), 64, np.uint8)) for _ in range(4)]
    return LaunchTrace("synthetic", (grid, 1, 1), (256, 1, 1), KernelResources(128, 0, 32, 0, 4),
                       LISTING, {(0, 0, 0): waves}, only_traced=True)


def made_points(truth: dict) -> tuple[list, tf.Launches]:
    """Three files of figures the model makes at `truth`: host parts, syncs in one file only."""
    traces, found = {}, []
    for k, kind in enumerate(KINDS):
        key = (Stage1("a8w8", True, k + 1), (4, 1024))
        traces[key] = synthetic(*kind)
    launches = tf.Launches(traces)
    times = launches.times([truth])[0]
    for n, key in enumerate(launches.keys):
        for file, syncs in (("a", 0), ("b", 1), ("c", 0)):
            row = calib.Row(f"{file}{n}", file, "synthetic", "benchmark", {}, {}, {}, {})
            host = 5.0 + 3 * n
            actual = host + syncs * tf.SYNC_US + times[key]
            found.append(tf.Point(row, key[1], actual, (), host, syncs, key[0]))
    return found, launches


def test_the_fit_finds_figures_that_reproduce_the_models_own_times():
    found, launches = made_points(TRUE)
    start = tf._residuals(found, launches.times([tf.start()])[0])
    assert np.abs(start).max() > 0.05  # the facts' starting figures do not fit them
    values = tf.fit(found, launches)
    residual = tf._residuals(found, launches.times([values])[0])
    assert np.abs(residual).max() < 0.01
    assert set(values) == set(TRUE)  # the sync is the figures file's, not the fit's


def test_figures_stay_inside_their_bounds():
    too_short = dict(TRUE, launch_gap_us=0.1)  # below the least launch gap the fit may take
    found, launches = made_points(too_short)
    values = tf.fit(found, launches)
    for name, (low, high) in tf.BOUNDS.items():
        assert low * (1 - 1e-9) <= values[name] <= high * (1 + 1e-9), name
    assert values["launch_gap_us"] == pytest.approx(tf.BOUNDS["launch_gap_us"][0])


def test_leaving_a_file_out_predicts_it_from_the_others():
    found, launches = made_points(TRUE)
    seen = []
    left_out = tf.leave_one_file_out(None, found, launches, lambda name, values: seen.append(name))
    assert seen == ["a", "b", "c"] and len(left_out) == len(found)
    # file b, the only one that syncs, is predicted as well as the others: the sync is sourced
    assert max(abs(item.error) for item in left_out) < 0.01
    summary = validation.summarize(left_out, (0.0, 0.0))
    assert summary.files == 3 and summary.worst == max(abs(item.error) for item in left_out)


def test_host_parts_of_the_data_file_are_the_facts_fixed_costs():
    cal = calib.load()
    found = {(p.row.id, p.shape): p for p in tf.points(cal)}
    tuned = found[("kernelsanders_60", (4, 1024))]  # 10 torch launches, 9 allocations, metadata + reduce
    facts = 4.3 + 10 * 2.0 + 9 * 0.444 + 8.0 + 7.27
    assert tuned.host_us == pytest.approx(facts) and tuned.syncs == 0
    assert tuned.stage == Stage1("a8w8", True, 16)
    assert found[("kernelsanders_a8w8_item", (4, 1024))].syncs == 1
    assert found[("kernelsanders_112", (4, 1024))].stage is None  # its GEMM path
    assert all(p.row.mode == "benchmark" for p in found.values())


def test_launch_times_follow_each_free_figure():
    trace = synthetic(32, 2, 8192)
    base = price_launch(trace, load_figures(TRUE)).microseconds
    slower = tf.Launches({("k", (1, 1)): trace}).times([dict(TRUE, hbm_bytes_per_second=2.0e12)])[0]
    assert slower[("k", (1, 1))] > 1.5 * base


def test_a_launch_whose_busiest_workgroup_was_traced_moves_its_share_of_the_bytes():
    trace = synthetic(32, 2, 8192)  # bandwidth-bound
    figures = dict(TRUE)
    whole = tf.Launches({("k", (1, 1)): trace}).times([figures])[0][("k", (1, 1))]
    share = tf.Launches({("k", (1, 1)): trace}, {("k", (1, 1)): 0.8}).times([figures])[0][("k", (1, 1))]
    gap = figures["launch_gap_us"]
    assert share - gap == pytest.approx((whole - gap) * 0.8, rel=0.02)  # still bandwidth-bound
