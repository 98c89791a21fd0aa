"""How stand-in runs are reported: the record's flag, times kept out of diff and the scoreboard's timing tables,
their own "where verified" column (never MI355X), the run table's title and `harness list`'s needs column."""
from pathlib import Path

import pytest

from harness import display
from harness import platform as platforms
from harness import submission as subs
from harness.results import diff as differ
from harness.results import records
from harness.results import scoreboard as board
from harness.results import verification

H200 = {"name": "NVIDIA H200", "arch": "sm_90", "backend": "cuda"}
ROCM_WITHOUT_AITER = {"name": "AMD Instinct MI355X", "arch": "gfx950", "backend": "rocm"}
REPO = Path(__file__).resolve().parent.parent


def record(number, mean, *, standin, device=H200, mode="benchmark", finished="2026-12-01T10:00:00"):
    raw = {"source": "local", "submission": {"number": number, "path": f"submissions/{number:03d}_s.py",
                                             "sha256": f"sha{number}", "requirements": ["aiter", "torch"],
                                             "optional": []},
           "mode": mode, "cases": "official", "device": device, "status": "pass", "reason": "",
           "results": [{"spec": {"batchsize": 4, "qseqlen": 1, "kvseqlen": 1024, "seed": 1}, "status": "pass",
                        "stats": {"runs": 5, "mean": mean, "std": 1.0, "err": 0.5, "best": mean, "worst": mean}}],
           "finished": finished, "standin": standin}
    return records.checked(raw)


def test_the_record_keeps_the_flag_and_its_times_are_not_real():
    assert record(14, 5e4, standin="aiter")["standin"] == "aiter"
    assert not records.real_timings(record(14, 5e4, standin="aiter"))
    assert record(1, 5e4, standin=None)["standin"] is None and records.real_timings(record(1, 5e4, standin=None))


def test_the_scoreboard_leaves_standin_times_out_and_says_so():
    tables = board.build_tables([record(14, 5e4, standin="aiter"), record(1, 9e4, standin=None)],
                                include_interpreter=True)
    table = tables[0]
    assert [row.label for row in table.rows] == ["001_s"] and table.standin == ["014_s"]
    assert any("aiter stand-in (correctness only)" in note for note in table.notes)


def test_where_verified_has_a_standin_column_and_never_counts_it_as_mi355x():
    passed = record(14, 5e4, standin="aiter", device=ROCM_WITHOUT_AITER, mode="test")
    found = board.where_verified([passed])
    assert "aiter stand-in" in board.VERIFIED_COLUMNS and found["014_s"].get("aiter stand-in", "").startswith("✓")
    assert "MI355X" not in found["014_s"]
    assert not verification.verified_on_mi355x(passed, [passed])


def test_diff_never_compares_standin_times():
    with pytest.raises(differ.NothingComparable, match="aiter stand-in"):
        differ.compare([record(14, 5e4, standin="aiter"), record(13, 6e4, standin="aiter")], "13", "14")


def test_list_shows_the_standin_where_it_would_be_used():
    here = platforms.Platform("cpu", "cpu (x86_64)", "cpu", {"aiter": None})
    real = platforms.Platform("rocm", "AMD Instinct MI355X", "gfx950", {"aiter": "0.1.7"})
    sub = subs.from_path(REPO / "submissions" / "014_aiter_persistent.py")
    assert display.needs_here(sub, here) == "aiter (stand-in here), torch"
    assert display.needs_here(sub, real) == "aiter, torch"
    assert platforms.can_run(sub, here) == (True, platforms.AITER_STANDIN)


def test_harness_list_shows_the_standin_on_the_repository_and_on_a_sample():
    from click.testing import CliRunner

    from harness.cli import main

    here = platforms.detect("cpu")
    if here.versions.get("aiter") is not None:
        pytest.skip("AMD's aiter is installed here: the stand-in is never used")
    listed = CliRunner().invoke(main, ["list", "--device", "cpu"])
    assert listed.exit_code == 0 and "014_aiter_persistent.py: needs aiter (stand-in here), torch" in listed.output
    sample = REPO / "tests" / "samples" / "aiter" / "standin" / "page_size_8.py"
    one = CliRunner().invoke(main, ["list", str(sample), "--device", "cpu"])
    assert one.exit_code == 0 and "- page_size_8.py: needs aiter (stand-in here), torch; runs here: yes" in one.output
