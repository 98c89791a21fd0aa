"""The scoreboard page and chart, rendered from a ledger written here."""
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner

from harness.results import floors as bandwidth_floors
from harness import paths
from harness.results import ledger
from harness.results import records
from harness.results.figures import geomean
from harness.results import scoreboard as board
from harness.cli import main
from pathlib import Path
from harness import exits
import helpers

H200 = {"name": "NVIDIA H200", "arch": "sm_90", "backend": "cuda"}
CPU = {"name": "cpu", "arch": "cpu", "backend": "cpu"}
REMOTE = {"name": "MI355X (remote)", "arch": "gfx950", "backend": "remote"}
SMALL_SHAPE = (4, 1024)
LARGE_SHAPE = (4, 8192)

FILES = {
    "001_torch.py": "import torch\n\ndef custom_kernel(data):\n    return data[0]\n",
    "119_hybrid.py": "import torch\nimport triton\n",
    "120_hip.py": ("from torch.utils.cpp_extension import load_inline\n"
                   "SOURCE = '#include <hip/hip_runtime.h>'\n"),
    "013_broken.py": "import torch\n",
    "200_aiter.py": "import aiter\n",
}


def record(name, *, means=None, device=H200, mode="benchmark", status="pass", reason="", cases="official",
           finished="2026-11-29T10:00:00", source="local", run=None, sha=None, case_status=None):
    number = int(name.split("_")[0])
    results = []
    for (batch, kv), mean in (means or {}).items():
        results.append({"spec": {"batchsize": batch, "qseqlen": 1, "kvseqlen": kv, "seed": 1},
                        "status": (case_status or {}).get((batch, kv), "pass"), "message": "",
                        "stats": None if mean is None else {"runs": 10, "mean": mean, "std": 1.0, "err": 0.3,
                                                            "best": mean, "worst": mean}})
    rec = {"source": source, "submission": {"number": number, "path": f"submissions/{name}",
                                            "sha256": sha or f"sha-{name}"},
           "mode": mode, "cases": cases, "flush": "fast", "device": device, "status": status, "reason": reason,
           "results": results, "started": finished, "finished": finished}
    if run:
        rec["remote"] = {"run": run}
    return rec


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A fake repository root with submission files (the ledger is conftest's, under tmp_path/results)."""
    (tmp_path / "submissions").mkdir()
    for name, text in FILES.items():
        (tmp_path / "submissions" / name).write_text(text)
    return tmp_path


def write_h200_benchmarks():
    ledger.append(record("001_torch.py", means={SMALL_SHAPE: 30000, LARGE_SHAPE: 50000},
                         finished="2026-11-29T09:00:00"))  # superseded by the next one
    ledger.append(record("001_torch.py", means={SMALL_SHAPE: 20000, LARGE_SHAPE: 41000}))
    ledger.append(record("119_hybrid.py", means={SMALL_SHAPE: 10000, LARGE_SHAPE: 20500}))
    ledger.append(record("120_hip.py", means={SMALL_SHAPE: 5000, LARGE_SHAPE: 10250}))
    ledger.append(record("013_broken.py", status="fail", reason="b4 kv1k: 812 of 32768 elements mismatch",
                         means={SMALL_SHAPE: None}, case_status={SMALL_SHAPE: "fail"}))
    ledger.append(record("200_aiter.py", status="skip", reason="needs aiter; this machine is NVIDIA H200 (sm_90)"))


def build(repo, **kwargs):
    return board.build_tables(records.load(root=repo), **kwargs)


def page(repo, **kwargs):
    return board.render_markdown(build(repo, **kwargs), ledger_file="results/ledger.jsonl", record_count=0,
                                 generated=datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc),
                                 chart="results/scoreboard.png")


def test_latest_record_per_submission_with_exact_times_geomean_and_speedups(repo):
    write_h200_benchmarks()
    [table] = build(repo)
    assert table.title == "NVIDIA H200 · sm_90 · benchmark · official cases"
    assert [row.label for row in table.rows] == ["001_torch", "119_hybrid", "120_hip"]
    assert table.shapes == [(4, 1, 1024), (4, 1, 8192)]
    torch_row, hybrid_row, hip_row = table.rows
    assert torch_row.means == {(4, 1, 1024): 20000.0, (4, 1, 8192): 41000.0}
    assert torch_row.geomean_ns == pytest.approx((20000 * 41000) ** 0.5)
    assert hybrid_row.speedup == pytest.approx(2.0) and hip_row.speedup == pytest.approx(4.0)
    assert table.baseline == "001_torch"
    assert [row.best for row in table.rows] == [False, False, True]

    text = page(repo)
    assert "| submission | b4 kv1k | b4 kv8k | geomean (µs) | speedup vs 001_torch | recorded (UTC) |" in text
    assert "| 001_torch | 20.0 | 41.0 | 28.6 | 1.00× | 2026-11-29 10:00 |" in text
    assert "| 119_hybrid | 10.0 | 20.5 | 14.3 | 2.00× | 2026-11-29 10:00 |" in text
    assert ("| **120_hip** ★ ⚠ not verified on MI355X | 5.00 | 10.2 | **7.16** | 4.00× | 2026-11-29 10:00 |"
            in text)
    assert "- 013_broken: fail — b4 kv1k: 812 of 32768 elements mismatch" in text
    assert ("- 200_aiter ⚠ not verified on MI355X: skip — needs aiter; this machine is NVIDIA H200 (sm_90)"
            in text)
    assert "Generated 2026-11-29 12:00 UTC by `harness scoreboard` from `results/ledger.jsonl`" in text
    assert "![per-shape latency](results/scoreboard.png)" in text


def test_baseline_setting_and_an_absent_baseline(repo):
    write_h200_benchmarks()
    [table] = build(repo, baseline=119)
    assert table.baseline == "119_hybrid"
    assert [round(row.speedup, 3) for row in table.rows] == [0.5, 1.0, 2.0]
    [table] = build(repo, baseline=13)  # in the ledger, but it failed: no complete result in this table
    assert table.baseline == "001_torch"
    assert "Submission 13 has no complete result here" in board.render_table(table)
    with pytest.raises(board.BaselineError, match="no result of submission 7"):
        build(repo, baseline=7)


def test_mixed_cache_flushes_are_noted(repo):
    write_h200_benchmarks()
    assert not build(repo)[0].notes
    official = record("119_hybrid.py", means={SMALL_SHAPE: 10000, LARGE_SHAPE: 20500}, finished="2026-11-29T11:00:00")
    official["flush"] = "official"
    ledger.append(official)
    [table] = build(repo)
    assert table.notes == ["Rows were timed with different cache flushes: 001_torch (fast), 119_hybrid (official), "
                           "120_hip (fast)."]


def test_a_row_missing_a_shape_gets_no_geomean_and_cannot_be_best(repo):
    ledger.append(record("001_torch.py", means={SMALL_SHAPE: 20000, LARGE_SHAPE: 40000}))
    ledger.append(record("119_hybrid.py", means={SMALL_SHAPE: 1000}))
    [table] = build(repo)
    assert table.rows[1].geomean_ns is None and table.rows[1].speedup is None
    assert table.rows[0].best and not table.rows[1].best
    assert "| 119_hybrid | 1.00 | – | – | – |" in board.render_table(table)


def test_tables_split_by_device_mode_and_cases_with_test_mode_verdicts(repo):
    write_h200_benchmarks()
    ledger.append(record("001_torch.py", device=CPU, mode="test", cases="small",
                         means={(1, 64): None, (3, 257): None}))
    ledger.append(record("001_torch.py", device=CPU, mode="benchmark", cases="small", means={(1, 64): 900000}))
    titles = [t.title for t in build(repo)]
    assert titles == ["NVIDIA H200 · sm_90 · benchmark · official cases", "cpu · test · small cases",
                      "cpu · benchmark · small cases"]
    test_table = board.render_table(build(repo)[1])
    assert "| submission | b1 kv64 | b3 kv257 | status | recorded (UTC) |" in test_table
    assert "| 001_torch | ✓ | ✓ | pass | 2026-11-29 10:00 |" in test_table


EMULATED = {"name": records.EMULATOR_MARK, "arch": records.EMULATOR_ARCH, "backend": "cpu"}
SMALL_CASES = {(1, 64): None, (3, 257): None}


def test_a_newer_emulated_pass_outranks_an_older_skip_on_the_same_machine(repo):
    ledger.append(record("120_hip.py", device=CPU, mode="test", cases="small", status="skip",
                         reason="needs ROCm: HIP source compiled with load_inline", finished="2026-12-01T10:00:00"))
    ledger.append(record("001_torch.py", device=CPU, mode="test", cases="small", means=SMALL_CASES))
    ledger.append(record("120_hip.py", device=EMULATED, mode="test", cases="small", means=SMALL_CASES,
                         finished="2026-12-04T10:00:00"))
    text = page(repo)
    assert "needs ROCm" not in text and "Skipped:" not in text
    cpu_table, emulated_table = build(repo)
    assert [row.label for row in cpu_table.rows] == ["001_torch"] and not cpu_table.skipped
    assert [row.label for row in emulated_table.rows] == ["120_hip"]


def test_a_skip_newer_than_the_pass_stays_listed(repo):
    ledger.append(record("120_hip.py", device=EMULATED, mode="test", cases="small", means=SMALL_CASES,
                         finished="2026-12-01T10:00:00"))
    ledger.append(record("120_hip.py", device=CPU, mode="test", cases="small", status="skip",
                         reason="needs ROCm (--device cpu)", finished="2026-12-04T10:00:00"))
    assert [item.label for table in build(repo) for item in table.skipped] == ["120_hip"]


def test_a_table_whose_results_are_all_left_out_says_so_under_its_heading(repo):
    ledger.append(record("200_aiter.py", device=CPU, mode="leaderboard", cases="small",
                         means={(1, 64): 900000}) | {"standin": True})
    (table,) = build(repo)
    text = board.render_table(table)
    heading, blank, first = text.splitlines()[:3]
    assert heading == "### cpu · leaderboard · small cases" and blank == ""
    assert first.startswith("No table:") and "Left out: 200_aiter" in text


def test_remote_tables_are_separate_with_the_rounding_note_and_the_secret_run_as_a_column(repo):
    write_h200_benchmarks()
    ledger.append(record("120_hip.py", device=REMOTE, source="remote", mode="leaderboard", run="public",
                         means={SMALL_SHAPE: 26500, LARGE_SHAPE: 37600}, finished="2026-11-29T11:00:00"))
    ledger.append(record("120_hip.py", device=REMOTE, source="remote", mode="leaderboard", run="secret",
                         finished="2026-11-29T11:00:00"))
    ledger.append(record("119_hybrid.py", device=REMOTE, source="remote", mode="leaderboard", run="public",
                         status="fail", reason="Leaderboard run failed", finished="2026-11-29T11:00:00"))
    ledger.append(record("119_hybrid.py", device=REMOTE, source="remote", mode="leaderboard", run="secret",
                         status="fail", reason="Leaderboard run failed", finished="2026-11-29T11:00:00"))
    tables = build(repo)
    assert [t.remote for t in tables] == [False, True]
    assert tables[1].title == "MI355X (remote) · gfx950 · leaderboard · official cases · public run"
    assert tables[1].secret == {"120_hip": "pass", "119_hybrid": "fail: Leaderboard run failed"}
    text = page(repo)
    local, remote = text.split("## Remote runs (MI355X via popcorn)")
    assert "rounds them to about three significant digits" in remote and "approximate" in remote
    assert ("| submission | b4 kv1k | b4 kv8k | score ≈ geomean (µs) | speedup vs 120_hip | recorded (UTC) "
            "| secret run |") in remote
    assert "| **120_hip** ★ | 26.5 | 37.6 | **31.6** | 1.00× | 2026-11-29 11:00 | pass |" in remote
    assert ("- 119_hybrid: fail — Leaderboard run failed (secret run: fail: Leaderboard run failed)" in remote)
    assert "MI355X (remote)" not in local


def test_a_secret_run_without_its_public_run_keeps_its_own_table(repo):
    ledger.append(record("120_hip.py", device=REMOTE, source="remote", mode="test", run="secret"))
    [table] = build(repo)
    assert table.title.endswith("secret run") and table.rows[0].label == "120_hip"


def test_hip_and_aiter_are_not_verified_until_a_passing_remote_test(repo):
    write_h200_benchmarks()
    assert [r.unverified for r in build(repo)[0].rows] == [False, False, True]
    # A failing remote test, or a remote benchmark, does not verify the file.
    ledger.append(record("120_hip.py", device=REMOTE, source="remote", mode="test", status="fail",
                         reason="Testing failed", finished="2026-11-29T11:00:00"))
    ledger.append(record("120_hip.py", device=REMOTE, source="remote", mode="benchmark",
                         means={SMALL_SHAPE: 26500}, finished="2026-11-29T11:30:00"))
    assert build(repo)[0].rows[2].unverified
    assert "not verified on MI355X" in page(repo)
    ledger.append(record("120_hip.py", device=REMOTE, source="remote", mode="test",
                         means={SMALL_SHAPE: None}, finished="2026-11-29T12:00:00"))
    assert not build(repo)[0].rows[2].unverified
    text = page(repo)
    assert "120_hip ⚠" not in text and "200_aiter ⚠ not verified on MI355X" in text


def test_verification_follows_the_file_hash_across_renumbering(repo):
    ledger.append(record("120_hip.py", means={SMALL_SHAPE: 5000}, sha="same-bytes"))
    ledger.append(record("121_hip.py", device=REMOTE, source="remote", mode="test", sha="same-bytes",
                         means={SMALL_SHAPE: None}))
    assert not build(repo)[0].rows[0].unverified


def test_requirements_named_in_the_record_win_over_the_file(repo):
    rec = record("001_torch.py", means={SMALL_SHAPE: 5000})
    rec["submission"]["requirements"] = ["torch", "aiter"]
    ledger.append(rec)
    assert build(repo)[0].rows[0].unverified


def test_bandwidth_floors_count_kv_q_and_output():
    bandwidth = bandwidth_floors.COPY_BANDWIDTH["H200"][0]
    # b4 kv1k, bf16: 4*1024*1152 KV bytes + 4 * (18432 Q + 16384 output) bytes at 4.27 TB/s
    assert bandwidth_floors.floor_ns((4, 1, 1024), "bf16", bandwidth) == pytest.approx((4 * 1024 * 1152 + 4 * 34816) / 4.27e3)
    floors = [bandwidth_floors.floor_ns((b, 1, kv), "fp8", bandwidth) for b in (4, 32, 64, 256) for kv in (1024, 8192)]
    assert geomean(floors) / 1000 == pytest.approx(15.36, abs=0.01)
    assert bandwidth_floors.copy_bandwidth("AMD Instinct MI355X")[1].startswith("datasheet")
    assert bandwidth_floors.copy_bandwidth("cpu") is None


def test_each_timed_table_states_its_floors(repo):
    write_h200_benchmarks()
    # b4 kv1k and b4 kv8k at 4.27 TB/s, bf16: 1.138 and 8.873 µs -> geomean 3.18 µs (fp8 1.61, mxfp4 0.881)
    assert ("Bandwidth floor geomeans (µs; KV + Q + output bytes at 4.27 TB/s, measured on the lent H200): "
            "bf16 3.18, fp8 1.61, mxfp4 0.88." in page(repo))


def test_regenerate_writes_page_and_chart(repo):
    write_h200_benchmarks()
    ledger.append(record("001_torch.py", device=CPU, mode="benchmark", cases="small", means={(1, 64): 900000}))
    summary = board.regenerate(output=repo / "scoreboard.md", chart=repo / "results" / "scoreboard.png", root=repo)
    assert summary.tables == 2 and summary.records == 7
    assert summary.chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = (repo / "scoreboard.md").read_text()
    assert "![per-shape latency](results/scoreboard.png)" in text and "(7 records)" in text


def test_empty_ledger_gives_a_page_and_no_chart(repo):
    summary = board.regenerate(output=repo / "scoreboard.md", chart=repo / "chart.png", root=repo)
    assert summary.chart is None and not (repo / "chart.png").exists()
    assert "No results yet" in (repo / "scoreboard.md").read_text()


def test_cli_scoreboard_warns_on_a_torn_line_and_rejects_a_missing_ledger(repo):
    write_h200_benchmarks()
    with open(paths.ledger_file(), "ab") as f:
        f.write(b'{"torn')
    out = repo / "board.md"
    result = CliRunner().invoke(main, ["scoreboard", "--ledger", str(paths.ledger_file()), "--output", str(out),
                                       "--chart", str(repo / "board.png")])
    assert result.exit_code == 0, result.output
    assert "warning:" in result.output and "skipped a torn ledger line" in result.output
    assert f"wrote {out} (1 table from 6 records)" in result.output
    missing = CliRunner().invoke(main, ["scoreboard", "--ledger", str(repo / "nope.jsonl")])
    assert missing.exit_code == 2 and "no ledger at" in missing.output


def test_remote_score_without_per_shape_times_is_shown_as_the_score(repo):
    ledger.append(record("119_hybrid.py", device=REMOTE, source="remote", mode="leaderboard", run="public",
                         means={SMALL_SHAPE: 20000, LARGE_SHAPE: 80000}))
    json_only = record("120_hip.py", device=REMOTE, source="remote", mode="leaderboard", run="public")
    json_only["remote"]["score"] = 0.00002
    ledger.append(json_only)
    [table] = build(repo)
    assert table.rows[0].geomean_ns == pytest.approx(40000) and table.rows[1].geomean_ns == pytest.approx(20000)
    text = board.render_table(table)
    assert "| **120_hip** ★ | – | – | **20.0** | 2.00× |" in text
    assert "Rows without per-shape times show the score popcorn printed" in text


def test_a_remote_attempt_without_a_report_is_listed_apart_with_its_reason(repo):
    failed = record("120_hip.py", device=REMOTE, source="remote", mode="leaderboard", status="error",
                    reason="popcorn-cli is not installed", run=None)
    failed["remote"] = {"run": None}
    ledger.append(failed)
    [table] = build(repo)
    assert table.title.endswith("attempts with no report") and not table.rows
    assert "- 120_hip ⚠ not verified on MI355X: error — popcorn-cli is not installed" in board.render_table(table)


def test_malformed_records_are_left_out_with_a_warning(repo):
    write_h200_benchmarks()
    ledger.append({"submission": "not a dict", "device": {}})
    broken = record("119_hybrid.py", means={SMALL_SHAPE: 1000}, finished="2026-11-29T23:00:00")
    broken["results"][0]["spec"]["batchsize"] = "four"
    ledger.append(broken)
    with pytest.warns(records.MalformedRecordWarning, match="left out 2 malformed"):
        [table] = build(repo)
    assert table.rows[1].means[(4, 1, 1024)] == 10000.0


def test_results_elsewhere_never_rewrite_the_repositorys_page(results_dir):
    """With $HARNESS_RESULTS pointing away from results/, the page goes beside those results."""
    before = paths.SCOREBOARD_PAGE.read_bytes()
    ledger.append(record("200_aiter.py", status="skip", reason="needs aiter"))
    summary = board.regenerate(allow_empty=True)
    assert summary.output == results_dir / "scoreboard.md" and summary.output.exists()
    assert paths.SCOREBOARD_PAGE.read_bytes() == before


# -- the chart: GPU panels only when a GPU has times, the task's shape order, several readable y ticks -----

def _panel_axes(fig):
    return [ax for ax in fig.axes if ax.get_title()]


def test_the_chart_leaves_cpu_times_out_orders_the_shapes_and_ticks_its_axis(tmp_path):
    from harness.results import chart

    shuffled = [(256, 8192), (4, 8192), (64, 1024), (32, 1024), (4, 1024), (256, 1024), (32, 8192), (64, 8192)]
    means = {shape: 20000.0 + 1000 * index for index, shape in enumerate(shuffled)}  # within a factor of 2
    ledger.append(record("119_hybrid.py", means=means))
    ledger.append(record("001_torch.py", means={(1, 64): 9e6}, device=CPU, cases="small"))
    tables = board.build_tables(records.load())
    [ax] = _panel_axes(chart.chart_figure(tables))
    assert "H200" in ax.get_title() and "CPU" not in ax.get_title()
    assert [label.get_text() for label in ax.get_xticklabels()] == [
        "b4 kv1k", "b4 kv8k", "b32 kv1k", "b32 kv8k", "b64 kv1k", "b64 kv8k", "b256 kv1k", "b256 kv8k"]
    low, high = ax.get_ylim()
    ticks = [tick for tick in ax.get_yticks() if low <= tick <= high]
    assert len(ticks) >= 3 and all(chart.plain_number(tick) for tick in ticks), (ticks, low, high)


def test_a_cpu_only_chart_says_its_times_are_not_gpu_times(tmp_path):
    from harness.results import chart

    ledger.append(record("001_torch.py", means={(1, 64): 9e6, (3, 257): 1.2e7}, device=CPU, cases="small"))
    [ax] = _panel_axes(chart.chart_figure(board.build_tables(records.load())))
    assert chart.CPU_TITLE in ax.get_title()
    low, high = ax.get_ylim()
    assert len([tick for tick in ax.get_yticks() if low <= tick <= high]) >= 3


def _board_page(tmp_path) -> Path:
    page = tmp_path / "board.md"
    page.write_text("# Scoreboard\n\n## NVIDIA H200 · benchmark · official cases\n| a table the user keeps |\n")
    return page


@pytest.mark.parametrize("how", ["HARNESS_LEDGER", "HARNESS_RESULTS", "--ledger"])
def test_scoreboard_refuses_a_ledger_that_is_not_there(tmp_path, monkeypatch, how):
    page = _board_page(tmp_path)
    before = page.read_text()
    args = ["scoreboard", "--output", page, "--chart", tmp_path / "chart.png"]
    if how == "HARNESS_LEDGER":
        monkeypatch.setenv(paths.LEDGER_ENV, str(tmp_path / "typo.jsonl"))
    elif how == "HARNESS_RESULTS":
        (tmp_path / "empty").mkdir()
        monkeypatch.setenv(paths.RESULTS_ENV, str(tmp_path / "empty"))
    else:
        args += ["--ledger", tmp_path / "typo.jsonl"]
    result = helpers.invoke(*args)
    assert result.exit_code == exits.EXIT_USAGE, result.output
    assert result.output.startswith("error: no ledger at") and len(result.output.strip().splitlines()) == 1
    assert how.lstrip("-") in result.output  # says where the name came from
    assert page.read_text() == before


def test_scoreboard_with_no_tables_replaces_a_page_only_when_asked(tmp_path):
    page = _board_page(tmp_path)
    before = page.read_text()
    paths.ledger_file().parent.mkdir(parents=True, exist_ok=True)
    paths.ledger_file().write_text("")  # a ledger with nothing in it
    refused = helpers.invoke("scoreboard", "--output", page, "--chart", tmp_path / "chart.png")
    assert refused.exit_code == exits.EXIT_USAGE and "--allow-empty" in refused.output, refused.output
    assert page.read_text() == before
    asked = helpers.invoke("scoreboard", "--output", page, "--chart", tmp_path / "chart.png", "--allow-empty")
    assert asked.exit_code == 0, asked.output
    assert "No results yet" in page.read_text()
