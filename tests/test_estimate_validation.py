"""Issue 29, second pass: the leave-one-file-out summary, fixed costs updated from their facts prior, and the
torch.compile / TunableOp factor acting on launches only. Everything here is the MI355X estimate, a model."""
import json
from dataclasses import replace

import pytest

from harness.estimate import calibration as calib
from harness.estimate import fit
from harness.estimate import model as cost
from harness.estimate import validation


def test_rank_correlation_and_quantiles_follow_their_textbook_definitions():
    assert validation.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert validation.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert validation._ranks([5, 1, 5, 3]) == [3.5, 1.0, 3.5, 2.0]  # ties share their mean rank
    assert validation._quantile([1, 2, 3, 4, 5], 0.9) == pytest.approx(4.6)
    assert validation._quantile([0.1, 0.3], 0.5) == pytest.approx(0.2)


def test_the_summary_is_the_leave_one_file_out_of_the_data_file():
    model, left_out, summary = validation.report()
    assert summary.figures == len(left_out) == 143 and summary.files == 18
    assert summary.band == model.errors and summary.covered_files == summary.files
    # no file's own figures in the fit that predicts it: each refit is told to skip the whole file
    for name in ("kernelsanders_60", "dgavriloff_v104"):
        kept = fit.points(calib.load(), frozenset({name}))
        assert all(row.file != name for row, _, _, _ in kept)
    # the figures the notes report (a regression guard: a change to data or model must update the notes)
    assert summary.median == pytest.approx(0.062, abs=0.005)
    assert summary.p90 == pytest.approx(0.233, abs=0.01)
    assert summary.spearman > 0.6
    lines = validation.table(left_out)
    assert lines[0].startswith("| file (MI355X estimate, left out)") and len(lines) == 2 + 18


def test_new_rows_cite_the_note_its_column_and_the_timed_file():
    data = json.loads(calib.DATA_FILE.read_text())
    rows = {row["id"]: row for row in data["rows"]}
    for name in ("kernelsanders_60", "kernelsanders_64", "kernelsanders_66", "kernelsanders_95",
                 "kernelsanders_106", "kernelsanders_168", "kernelsanders_170"):
        row = rows[name]
        assert row["source"]["repo"] == "samuelzxu/kernelsanders" and row["source"]["column"]
        assert row["timed_file"]["path"].endswith(".py") and len(row["timed_file"]["sha256"]) == 64
        assert "may have run before the 2026-03-18 input change" in row["source"]["date"]
    assert rows["kernelsanders_60_ranked"]["mode"] == "leaderboard"
    excluded = {entry["id"]: entry for entry in data["excluded"]}
    for name in ("kernelsanders_19", "kernelsanders_27", "kernelsanders_28"):
        assert "floor" in excluded[name]["reason"]


def test_fixed_costs_start_at_their_facts_value_and_the_fit_may_move_them():
    cal = calib.load()
    model = fit.fit(cal)
    for column, prior in fit._priors(cal).items():
        assert column in model.coefficients, column
        assert 0 < model.fixed_us(column) < 3 * prior, column  # a weak prior: the figures decide, within reason
    bare = cost.Model(calibration=cal, coefficients={}, fitted=frozenset())
    assert bare.fixed_us("torch:launch") == cal.torch_launch_us  # without a fit: the facts
    priced = cost.price(calib.Launch("alloc", "torch.empty", count=2), model)
    assert priced.us == pytest.approx(2 * model.coefficients["alloc"]) and "prior: facts" in priced.basis


def test_compile_and_tunableop_shorten_a_gemm_paths_launches_not_its_bytes():
    model = fit.fit(calib.load())
    small, large = (calib.gemm_path_bytes(4, kv)[0] for kv in (1024, 8192))
    saved = []
    for nbytes in (small, large):
        plain = cost.price(calib.Launch("gemm", "aten.bmm", count=2, bytes=nbytes), model)
        both = cost.price(calib.Launch("gemm", "aten.bmm", count=2, bytes=nbytes,
                                       effects=("torch_compile", "tunableop")), model)
        saved.append(plain.us - both.us)
    assert saved[0] == pytest.approx(saved[1]) and saved[0] > 0  # the same launches saved at 1k and 8k


def test_a_row_turning_on_compile_is_fitted_with_the_factor_on_its_launches():
    cal = calib.load()
    row = next(r for r in cal.rows if r.id == "kernelsanders_170")
    launches = calib.row_launches(row, (4, 8192))
    gemm = next(l for l in launches if l.kind == "gemm")
    assert gemm.effects == ("torch_compile", "tunableop")
    known, columns = fit._split(launches, cal)
    factor = cal.effects["torch_compile"][0] * cal.effects["tunableop"][0]
    assert columns["gemm:launch"] == pytest.approx(2 * factor)
    assert columns["gemm:per_gb"] == pytest.approx(gemm.bytes / 1e9)
    plain = replace(row, structure={**row.structure, "by_shape": {
        k: {**v, "effects": []} for k, v in row.structure["by_shape"].items()}})
    _, without = fit._split(calib.row_launches(plain, (4, 8192)), cal)
    assert without["gemm:launch"] == pytest.approx(2.0) and known >= 0
