"""run/cases.py: the official lists from task.yml, the small CPU set, user case files, the spec line."""
import pytest

from harness.run import cases


def test_official_cases_come_from_task_yml():
    tests = cases.official("test")
    assert tests[0] == {"batchsize": 4, "qseqlen": 1, "kvseqlen": 1024, "seed": 4220}
    assert [(c["batchsize"], c["kvseqlen"]) for c in tests] == [(4, 1024), (32, 1024), (64, 8192), (256, 8192)]
    benchmarks = cases.official("benchmark")
    assert len(benchmarks) == 8
    assert [c["seed"] for c in benchmarks] == [4217, 4220, 5412, 5415, 1357, 1360, 9823, 9826]
    assert cases.official("leaderboard") == benchmarks == cases.official("profile")


def test_unknown_mode_is_refused():
    with pytest.raises(cases.CaseError, match="unknown mode"):
        cases.official("script")


def test_small_cases_are_the_agreed_ones_and_load_as_copies():
    assert cases.SMALL == [{"batchsize": 1, "qseqlen": 1, "kvseqlen": 64, "seed": 11},
                           {"batchsize": 3, "qseqlen": 1, "kvseqlen": 257, "seed": 12},
                           {"batchsize": 2, "qseqlen": 1, "kvseqlen": 4500, "seed": 13}]
    loaded = cases.load("small", "test")
    loaded[0]["seed"] = 0
    assert cases.SMALL[0]["seed"] == 11


def test_case_time_limits_follow_task_yml():
    assert cases.case_timeout_s("test") == 900
    assert cases.case_timeout_s("benchmark") == 900
    assert cases.case_timeout_s("profile") == 900
    assert cases.case_timeout_s("leaderboard") == 1200


def test_eval_style_lines_in_any_key_order(tmp_path):
    path = tmp_path / "cases.txt"
    path.write_text("# two shapes\nseed: 4217; qseqlen: 1; kvseqlen: 1024; batchsize: 4\n\n"
                    "batchsize: 2; qseqlen: 1; kvseqlen: 64; seed: -5\n")
    assert cases.load(str(path), "benchmark") == [
        {"batchsize": 4, "qseqlen": 1, "kvseqlen": 1024, "seed": 4217},
        {"batchsize": 2, "qseqlen": 1, "kvseqlen": 64, "seed": -5},
    ]


def test_yaml_list_of_specs_with_uneven_lengths(tmp_path):
    path = tmp_path / "cases.yml"
    path.write_text("- {batchsize: 1, qseqlen: 1, kvseqlen: 64, seed: 11}\n"
                    "- batchsize: 2\n  qseqlen: 1\n  kvseqlen: 100\n  seed: 3\n  kv_seq_lens: [100, 7]\n")
    loaded = cases.load(str(path), "test")
    assert loaded[1]["kv_seq_lens"] == [100, 7]
    assert len(loaded) == 2


@pytest.mark.parametrize("text, message", [
    ("- {batchsize: 1, qseqlen: 1, kvseqlen: 64}\n", "missing seed"),
    ("- {batchsize: 1, qseqlen: 1, kvseqlen: 64, seed: 1, heads: 16}\n", "unknown key"),
    ("- {batchsize: one, qseqlen: 1, kvseqlen: 64, seed: 1}\n", "batchsize must be an integer"),
    ("- {batchsize: 0, qseqlen: 1, kvseqlen: 64, seed: 1}\n", "batchsize must be positive"),
    ("- {batchsize: 2, qseqlen: 1, kvseqlen: 64, seed: 1, kv_seq_lens: [3]}\n", "kv_seq_lens"),
    ("batchsize: 4; qseqlen: 1; kvseqlen: 1.5; seed: 1\n", "invalid case line"),
    ("batchsize: 4\nseed: 1\n", "expected a YAML list"),
    ("tests:\n  - {batchsize: 1}\n", "task.yml"),
    ("- [unclosed\n", "not YAML"),
    ("# nothing\n", "no cases"),
])
def test_bad_case_files_get_one_clear_line(tmp_path, text, message):
    path = tmp_path / "bad.yml"
    path.write_text(text)
    with pytest.raises(cases.CaseError, match=message) as caught:
        cases.load(str(path), "test")
    assert "\n" not in str(caught.value)


def test_missing_cases_file_is_named():
    with pytest.raises(cases.CaseError, match="no such file: nowhere.yml"):
        cases.load("nowhere.yml", "test")


def test_spec_line_is_the_official_test_line_format():
    assert cases.spec_line({"batchsize": 4, "qseqlen": 1, "kvseqlen": 1024, "seed": 4220}) == \
        "batchsize: 4; qseqlen: 1; kvseqlen: 1024; seed: 4220"
    line = cases.spec_line({"batchsize": 2, "qseqlen": 1, "kvseqlen": 64, "seed": 1})
    assert cases.parse_eval_lines(line) == [{"batchsize": 2, "qseqlen": 1, "kvseqlen": 64, "seed": 1}]
