"""Remote submission: the popcorn report parser, the error lines, the rate-limit memory, the gate and
the whole `make submit` flow against a stand-in popcorn-cli (tests/fixtures/popcorn/bin/popcorn-cli)."""
import json
import math
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import torch

from harness import paths
from harness.checks import directives
from harness.results import ledger
from harness.results.records import EMULATOR_MARK
from harness.remote import popcorn_errors
from harness.remote import popcorn_report
from harness.remote import ratelimit
from harness.remote import submit as remote
import helpers

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "popcorn"
SAMPLES = REPO / "tests" / "samples" / "remote"
STANDIN_BIN = FIXTURES / "bin"
HARNESS = [sys.executable, "-c", "from harness.cli import main; main()"]

# The ns values the report fixtures were formatted from (kernelbot's format_time), per ranked shape.
RANKED_NS = [20412.3, 41230.5, 37011, 177345, 59120, 329400, 174220, 2456789]
BENCH_SPECS = [(4, 1024, 4217), (4, 8192, 4220), (32, 1024, 5412), (32, 8192, 5415),
               (64, 1024, 1357), (64, 8192, 1360), (256, 1024, 9823), (256, 8192, 9826)]


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def spec(batch, kv, seed):
    return {"batchsize": batch, "qseqlen": 1, "kvseqlen": kv, "seed": seed}


# POPCORN_FACTS.md, reconstructed example A, verbatim (as popcorn <= v1.3.15 prints it).
EXAMPLE_A = '''"**MI355X on GitHub ✅ success**
> Workflow [23855740669](<https://github.com/gpu-mode/kernelbot/actions/runs/23855740669>) completed
> Downloading artifacts... done
> ✅ Benchmarking successful

Running on:
* GPU: `AMD Instinct MI355X`
* CPU: `<cpu model>`
* Device count: `1`
* Runtime: `ROCm`
* Platform: `<platform string>`
* Torch: `<torch version>`
* Hostname: `<runner hostname>`


## Benchmarks:
```
seed: 4217; qseqlen: 1; kvseqlen: 1024; batchsize: 4
 ⏱ 26.5 ± 0.04 µs
 ⚡ 25.9 µs 🐌 31.2 µs

seed: 4220; qseqlen: 1; kvseqlen: 8192; batchsize: 4
 ⏱ 37.6 ± 0.03 µs
 ⚡ 36.8 µs 🐌 40.2 µs
```"'''


# ------------------------------------------------------------------------------------ numbers

@pytest.mark.parametrize("text, value_ns, err_ns, resolution_ns", [
    ("26.5 ± 0.04 µs", 26500, 40, 100),
    ("312 ± 0.3 µs", 312000, 300, 1000),
    ("2.48 ± 0.003 ms", 2480000, 3000, 10000),
    ("5.00 µs", 5000, None, 10),
    ("1850 ± 2.1 ns", 1850, 2.1, 1),
    ("0.5 ns", 0.5, None, 0.1),
    ("45.0 µs", 45000, None, 100),
])
def test_printed_times_convert_to_ns_with_their_resolution(text, value_ns, err_ns, resolution_ns):
    value, err = popcorn_report.parse_time(text)
    assert value.ns == pytest.approx(value_ns)
    assert value.resolution_ns == pytest.approx(resolution_ns)
    assert (err.ns if err else None) == (pytest.approx(err_ns) if err_ns is not None else None)


def test_missing_time_is_none_and_garbage_is_refused():
    assert popcorn_report.parse_time("–") == (None, None)
    with pytest.raises(popcorn_report.ReportFormatError):
        popcorn_report.parse_time("fast")
    with pytest.raises(popcorn_report.ReportFormatError):
        popcorn_report.parse_time("12 parsecs")


def test_spec_is_read_by_key_not_position():
    assert popcorn_report.parse_spec("seed: 4217; qseqlen: 1; kvseqlen: 1024; batchsize: 4") == spec(4, 1024, 4217)
    assert popcorn_report.parse_spec("batchsize: 4; qseqlen: 1; kvseqlen: 1024; seed: 4217") == spec(4, 1024, 4217)
    assert popcorn_report.parse_spec("None") is None


# ------------------------------------------------------------------------------------ text reports

def test_example_a_benchmark_mode():
    report = popcorn_report.parse_report("\n" + EXAMPLE_A + "\n")  # stdout: popcorn prints a newline first
    assert report.generation == "text"
    (run,) = report.runs
    assert (run.run, run.delivered) == ("public", True)
    assert run.workflow_url == "https://github.com/gpu-mode/kernelbot/actions/runs/23855740669"
    assert run.system["GPU"] == "AMD Instinct MI355X"
    (stage,) = run.stages
    assert (stage.name, stage.status) == ("benchmark", "pass")
    first, second = stage.results
    assert first.spec == spec(4, 1024, 4217) and second.spec == spec(4, 8192, 4220)
    assert (first.mean.ns, first.err.ns, first.best.ns, first.worst.ns) == pytest.approx((26500, 40, 25900, 31200))
    assert (second.mean.ns, second.err.ns) == pytest.approx((37600, 30))
    assert run.score is None  # benchmark mode is never scored


def test_example_b_test_mode_with_a_failing_test():
    (run,) = popcorn_report.parse_report(fixture("test_failure_v1315.txt")).runs
    (stage,) = run.stages
    assert (stage.name, stage.status, stage.verdict) == ("test", "fail", "❌ Testing failed")
    assert [r.status for r in stage.results] == ["pass", "fail", "pass", "pass"]
    failed = stage.results[1]
    assert failed.spec == spec(32, 1024, 5412)
    lines = failed.message.splitlines()
    assert lines[0] == "Number of mismatched elements: 81920"
    assert lines[-1] == "... and 81919 more mismatched elements."
    assert stage.results[0].message == "Maximum error: tensor(0.0312, device='cuda:0')"
    assert "batchsize: 32; qseqlen: 1; kvseqlen: 1024; seed: 5412" in stage.reason
    assert run.failure == "tests ran in 41.87 s but did not all pass"


def test_leaderboard_mode_keeps_public_and_secret_runs_apart():
    report = popcorn_report.parse_report(fixture("leaderboard_success_v1315.txt"))
    public, secret = report.runs
    assert (public.run, secret.run) == ("public", "secret")
    assert [(s.name, s.status) for s in public.stages] == [("test", "pass"), ("benchmark", "pass"),
                                                           ("leaderboard", "pass")]
    assert [len(s.results) for s in public.stages] == [4, 8, 8]
    ranked = public.stages[2].results
    assert [r.spec for r in ranked] == [spec(*s) for s in BENCH_SPECS]
    assert ranked[-1].mean.text == "2.46 ms" and ranked[-1].mean.ns == pytest.approx(2_460_000)
    assert ranked[3].mean.text == "177 µs" and ranked[3].err.ns == pytest.approx(100)
    # the score: geomean of the ranked (not the "Benchmarks") means, close to the true one despite rounding
    true_score = math.exp(sum(math.log(ns / 1e9) for ns in RANKED_NS) / len(RANKED_NS))
    assert public.score_approximate and public.score == pytest.approx(true_score, rel=3e-3)
    benchmark_means = [r.mean.ns for r in public.stages[1].results]
    assert public.score != pytest.approx(math.exp(sum(math.log(m / 1e9) for m in benchmark_means) / 8), rel=3e-3)
    # the secret run: verdict lines only, no timings, no score
    assert [(s.name, s.status) for s in secret.stages] == [("test", "pass"), ("benchmark", "pass"),
                                                           ("leaderboard", "pass")]
    assert all(not s.results for s in secret.stages) and secret.score is None


def test_ranked_failure_leaves_later_shapes_missing():
    public, secret = popcorn_report.parse_report(fixture("leaderboard_ranked_failure_v1315.txt")).runs
    ranked = public.stages[2]
    assert (ranked.name, ranked.status) == ("leaderboard", "fail")
    assert [r.status for r in ranked.results] == ["pass", "pass", "fail"] + ["skip"] * 5
    failed = ranked.results[2]
    assert failed.spec == spec(32, 1024, 5412)
    # the raw error's literal \n (a line ending in a backslash in popcorn's output) becomes a line break
    assert failed.message.splitlines() == ["Number of mismatched elements: 1024", "ERROR at (0, 3, 7): 0.5 -0.25",
                                           "... and 1023 more mismatched elements."]
    assert all(r.spec is None and r.mean is None for r in ranked.results[3:])
    assert public.score is None and secret.stages[2].status == "fail"


def test_runner_failure_and_server_timeout():
    (run,) = popcorn_report.parse_report(fixture("runner_failure_v1315.txt")).runs
    assert not run.delivered and run.failure == "Could not download artifacts" and run.stages == []
    (run,) = popcorn_report.parse_report(fixture("test_timeout_v1315.txt")).runs
    (stage,) = run.stages
    assert stage.status == "error" and "timed out" in stage.reason and "900.12" in stage.reason
    assert 'File "/tmp/tmpa1b2c3d4/submission.py", line 12' in run.logs["Program stderr"]


def test_a_crash_after_an_earlier_stage_log_is_attributed_to_its_stage():
    text = ('"**MI355X on GitHub ✅ success**\n> ✅ Testing successful\n> ❌ Running benchmarks failed (internal error 1)'
            '\n\nRunning on:\n* GPU: `AMD Instinct MI355X`\n\n\n## ✅ Passed 1/1 tests:\n```\n'
            '✅ seed: 4220; qseqlen: 1; kvseqlen: 1024; batchsize: 4\n> Maximum error: tensor(0.03)```'
            '# Running failed\nCommand ```bash\npython3 eval.py benchmark /tmp/tmpq```\n'
            'exited with error code **1** after 12.34 seconds.\n\n## Program stderr:\n```\nSegmentation fault```"')
    (run,) = popcorn_report.parse_report(text).runs
    test, bench = run.stages
    assert (test.status, len(test.results)) == ("pass", 1)
    assert bench.status == "error"
    assert bench.reason == "running benchmarks failed: internal error 1 (the run exited with error code 1 after 12.34 s)"
    assert run.logs["Program stderr"] == "Segmentation fault"


def test_a_compile_failure_is_one_error_record():
    (run,) = popcorn_report.parse_report('"**MI355X on GitHub ✅ success**\n> ❌ Compilation failed\n"').runs
    assert run.stages == [] and run.failure == "compilation failed on the server"
    (record,) = remote.records_from_report(popcorn_report.Report("text", [run]), context("test"), "2026-04-06T21:30:00+00:00")
    assert (record["mode"], record["status"], record["reason"]) == ("test", "error", "compilation failed on the server")


def test_escaped_quotes_backslashes_and_tabs_are_undone():
    (run,) = popcorn_report.parse_report(fixture("test_success_v1315.txt")).runs
    assert run.logs["Program stderr"] == 'UserWarning: "fp8" path taken for C:\\temp\\kv\tcolumn 2\nwarnings.warn("done")'
    assert [s.status for s in run.stages] == ["pass"] and len(run.stages[0].results) == 4


def popcorn_printout(reports: list[str]) -> str:
    """What popcorn-cli <= v1.3.15 does to the server's array: trim, drop [ ], every \\n -> newline."""
    text = json.dumps(reports, ensure_ascii=False, separators=(",", ":")).strip()
    return text[1:-1].replace("\\n", "\n")


def test_split_reports_inverts_popcorn_post_processing():
    tricky = ['**A ✅ success**\n> line "quoted", with \\ a backslash',
              'a literal backslash-n \\n, a doubled one \\\\n, a backslash at a line end \\\nand "," inside',
              'tab\there, control \x01 char, glyphs ⏱ ⚡ 🐌 µ –\n']
    assert popcorn_report.split_reports(popcorn_printout(tricky)) == tricky
    assert popcorn_report.split_reports(json.dumps(tricky, ensure_ascii=False)) == tricky  # the raw array, unprocessed


def test_unknown_output_is_a_format_error():
    for text in ("", "Submission accepted", '"**unterminated'):
        with pytest.raises(popcorn_report.ReportFormatError):
            popcorn_report.parse_report(text)


# ------------------------------------------------------------------------------------ JSON generation

def test_json_summary_generation_has_exact_scores_and_no_timings():
    report = popcorn_report.parse_report("\n" + fixture("json_leaderboard_v1323.txt"))
    assert report.generation == "json"
    assert [(r.run, r.stages[0].name, r.stages[0].status) for r in report.runs] == [
        ("public", "test", "pass"), ("public", "benchmark", "pass"), ("public", "leaderboard", "pass"),
        ("secret", "leaderboard", "pass")]
    assert report.runs[2].score == 0.00009214 and not report.runs[2].score_approximate
    assert report.runs[3].score == 0.00009251
    (run,) = popcorn_report.parse_report(fixture("json_test_failed_v1323.txt")).runs
    assert run.stages[0].status == "fail"


# ------------------------------------------------------------------------------------ records

def context(mode="leaderboard"):
    return remote.SendContext({"number": 950, "path": "tests/samples/remote/950_remote_ok.py", "sha256": "ab",
                               "requirements": ["torch"], "optional": [], "numbered": False},
                              mode, "amd-mixed-mla", "MI355X", "results/remote/x", "2026-04-06T21:00:00+00:00",
                              "1.3.15")


def test_records_one_per_run_and_stage_with_rounding_noted():
    report = popcorn_report.parse_report(fixture("leaderboard_success_v1315.txt"))
    records = remote.records_from_report(report, context(), "2026-04-06T21:30:00+00:00")
    assert [(r["remote"]["run"], r["mode"], r["status"]) for r in records] == [
        ("public", "test", "pass"), ("public", "benchmark", "pass"), ("public", "leaderboard", "pass"),
        ("secret", "test", "pass"), ("secret", "benchmark", "pass"), ("secret", "leaderboard", "pass")]
    for record in records:
        assert record["source"] == "remote" and record["device"] == remote.REMOTE_DEVICE
        assert record["remote"]["submitted_mode"] == "leaderboard"
    ranked = records[2]
    first = ranked["results"][0]
    assert first["spec"] == spec(4, 1024, 4217)
    assert first["stats"] == {"runs": None, "mean": pytest.approx(20400), "std": None, "err": pytest.approx(40),
                              "best": pytest.approx(19900), "worst": pytest.approx(24500)}
    assert first["notes"]["printed"] == {"mean": "20.4 µs", "err": "0.04 µs", "best": "19.9 µs", "worst": "24.5 µs"}
    assert first["notes"]["resolution_ns"]["mean"] == pytest.approx(100)
    assert "printed" in ranked["remote"]["rounding"]
    assert ranked["remote"]["score_approximate"] is True and ranked["remote"]["score"] > 0
    assert records[5]["remote"]["score"] is None  # the secret run printed no timings
    assert ranked["versions"]["torch"] == "2.9.0+rocm7.0" and ranked["versions"]["popcorn"] == "1.3.15"
    json.dumps(records)  # ledger-ready


def test_failed_attempt_is_one_error_record():
    error = remote.RemoteError("the server's rate limit: 1/1 ...", "rate_limit")
    record = remote.error_record(context(), error, "2026-04-06T21:30:00+00:00")
    assert (record["status"], record["reason"], record["results"]) == ("error", str(error), [])
    assert record["remote"]["error_kind"] == "rate_limit" and record["remote"]["run"] is None


# ------------------------------------------------------------------------------------ server errors

@pytest.mark.parametrize("stderr, kind, words", [
    ("Application error: Rate limit exceeded: 1/1 leaderboard submissions per hour. Try again in 3273s. "
     "(Status Code: 400)", "rate_limit", ["1/1 leaderboard", "55 min"]),
    ("Application error: Server processing error: The deadline to submit to amd-mixed-mla has passed.\n"
     "It was 2026-04-07 07:59:00 and today is 2026-11-29 18:00:00. (Status Code: 400)", "deadline",
     ["deadline", "2026-04-07 07:59:00"]),
    ("Application error: Server returned status 500 Internal Server Error: Your code contains work on another "
     "stream. This is not allowed and may result in your disqualification.", "rejected", ["forbids"]),
    ("Application error: Server returned status 413 Payload Too Large: Submission file is too large (limit: 1MB).",
     "rejected", ["1 MB"]),
    ("Application error: Server returned status 400 Bad Request: Leaderboard name `other` specified in the command "
     "doesn't match the one in the submission script header `amd-mixed-mla`.", "rejected", ["`other`"]),
    ("Application error: Server processing error: Submission rejected by KernelGuard pre-check (high_critical). "
     "Matched rules: TIMER_MONKEYPATCH, OUTPUT_REPLAY_CACHE. (Status Code: 400)", "kernelguard",
     ["TIMER_MONKEYPATCH, OUTPUT_REPLAY_CACHE"]),
    ("Application error: Submission 48213 hacked: Submission rejected by KernelGuard pre-check (high_critical). "
     "Matched rules: FAKE_BENCHMARK_EMIT.", "kernelguard", ["FAKE_BENCHMARK_EMIT"]),
    ("Application error: Submission 48213 timed_out: ranked run exceeded 1200 s", "timeout", ["48213"]),
    ("Application error: error sending request for url (https://example.invalid/amd-mixed-mla/MI355X/test): "
     "error trying to connect: tcp connect error: Connection refused (os error 111)", "network", ["network"]),
    ("Application error: Server returned status 502 Bad Gateway: upstream unavailable", "server", ["502"]),
    ("Application error: Config file not found at /home/u/.popcorn.yaml. Please run `popcorn register` first.",
     "not_registered", ["register"]),
    ("Application error: Timed out waiting for submission 48213 after 3600 seconds", "timeout", ["waiting"]),
    ("Application error: something new", "popcorn", ["something new"]),
])
def test_server_messages_become_one_clear_line(stderr, kind, words):
    error = popcorn_errors.classify_failure("Submitting to leaderboard: amd-mixed-mla\nGPU: MI355X\n" + stderr, 1)
    assert error.kind == kind
    assert "\n" not in str(error)
    for word in words:
        assert word in str(error)


# ------------------------------------------------------------------------------------ rate limits

NOW = datetime(2026, 4, 6, 12, 0, tzinfo=timezone.utc)


def sent(when, category="leaderboard", outcome="report", **extra):
    entry_id = os.urandom(4).hex()
    ratelimit.note_sent({"id": entry_id, "time": when.isoformat(), "leaderboard": "amd-mixed-mla",
                      "category": category, "mode": category, "outcome": "pending"})
    ratelimit.note_sent({"id": entry_id, "time": when.isoformat(), "outcome": outcome, **extra})


def test_rate_limit_memory(tmp_path, monkeypatch):
    assert ratelimit.check_rate_limit("amd-mixed-mla", "leaderboard", NOW).ok
    sent(NOW - timedelta(minutes=20))
    check = ratelimit.check_rate_limit("amd-mixed-mla", "leaderboard", NOW)
    assert not check.ok and "1/1 leaderboard" in check.message and "40 min" in check.message
    assert ratelimit.check_rate_limit("amd-mixed-mla", "leaderboard", NOW + timedelta(minutes=41)).ok
    assert ratelimit.check_rate_limit("other-board", "leaderboard", NOW).ok  # per leaderboard
    for minutes in range(5):  # test, benchmark and profile share the "test" category: 6/hour
        sent(NOW - timedelta(minutes=minutes), "test")
    assert ratelimit.check_rate_limit("amd-mixed-mla", "benchmark", NOW).ok
    sent(NOW, "test", outcome="rejected")  # refused before the server created a submission: not counted
    assert ratelimit.check_rate_limit("amd-mixed-mla", "test", NOW).ok
    sent(NOW, "test")
    assert not ratelimit.check_rate_limit("amd-mixed-mla", "test", NOW).ok
    monkeypatch.setenv("HARNESS_RATE_LIMIT_TEST", "10")
    assert ratelimit.check_rate_limit("amd-mixed-mla", "test", NOW).ok


def test_server_retry_time_is_remembered(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_RATE_LIMIT_LEADERBOARD", "5")
    sent(NOW - timedelta(hours=3), outcome="rate_limit", retry_at=(NOW + timedelta(minutes=30)).isoformat())
    check = ratelimit.check_rate_limit("amd-mixed-mla", "leaderboard", NOW)
    assert not check.ok and "server said" in check.message
    assert ratelimit.check_rate_limit("amd-mixed-mla", "leaderboard", NOW + timedelta(minutes=31)).ok


def test_a_pending_send_counts_and_a_bad_limit_setting_is_refused(tmp_path, monkeypatch):
    ratelimit.note_sent({"id": "killed", "time": NOW.isoformat(), "leaderboard": "amd-mixed-mla",
                      "category": "leaderboard", "outcome": "pending"})  # the harness died while waiting
    assert not ratelimit.check_rate_limit("amd-mixed-mla", "leaderboard", NOW).ok
    monkeypatch.setenv("HARNESS_RATE_LIMIT_LEADERBOARD", "one")
    with pytest.raises(remote.RemoteError) as caught:
        ratelimit.rate_limits()
    assert caught.value.exit_code == 2


# ------------------------------------------------------------------------------------ directives

def test_directives_as_popcorn_and_the_server_read_them():
    text = "#!POPCORN leaderboard amd-mixed-mla\n#!POPCORN gpu MI355X\nimport torch\n#!POPCORN gpus B200\n"
    read = directives.read_directives(text)
    assert read.leaderboard == "amd-mixed-mla" and read.gpus == ["B200"]  # later lines win
    assert directives.header_leaderboard(text) == "amd-mixed-mla"
    assert directives.header_leaderboard('"""doc"""\n#!POPCORN leaderboard amd-mixed-mla\n') is None


# ------------------------------------------------------------------------------------ send, in process

@pytest.fixture
def popcorn_env(tmp_path, monkeypatch):
    """The stand-in popcorn-cli first on PATH, a registered $HOME, a private ledger and remote dir."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".popcorn.yaml").write_text("cli_id: test-only\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{STANDIN_BIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("POPCORN_STANDIN_ARGS_LOG", str(tmp_path / "args.jsonl"))
    for name in ("POPCORN_STANDIN_REPORT", "POPCORN_STANDIN_ERROR", "POPCORN_STANDIN_SLEEP", "POPCORN_STANDIN_EXPECT",
                 "POPCORN_STANDIN_VERSION"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def standin_calls(tmp_path) -> list[list[str]]:
    log = tmp_path / "args.jsonl"
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [call for call in calls if call != ["--version"]]


def test_send_records_a_report(popcorn_env, monkeypatch):
    monkeypatch.setenv("POPCORN_STANDIN_REPORT", str(FIXTURES / "test_failure_v1315.txt"))
    plan = remote.plan(str(SAMPLES / "950_remote_ok.py"), mode="test")
    waits = []
    outcome = remote.send(plan, on_wait=lambda elapsed, line: waits.append(line), poll_s=0.05)
    assert outcome.error is None and outcome.exit_code == 1  # delivered, but a test failed
    (record,) = ledger.read()
    assert (record["mode"], record["status"], record["source"]) == ("test", "fail", "remote")
    assert (record["submission"]["number"], record["submission"]["path"]) == (None, "tests/samples/remote/950_remote_ok.py")
    assert sorted(p.name for p in outcome.report_dir.iterdir()) == ["command.txt", "report.txt", "stderr.txt",
                                                                    "stdout.txt"]
    assert (outcome.report_dir / "report.txt").read_text() == fixture("test_failure_v1315.txt")
    history = ratelimit.sent_history()
    assert [(h["category"], h["outcome"]) for h in history] == [("test", "report")]


def test_new_popcorn_generation_is_flagged_and_its_summary_recorded(popcorn_env, monkeypatch):
    monkeypatch.setenv("POPCORN_STANDIN_VERSION", "1.3.23")
    monkeypatch.setenv("POPCORN_STANDIN_REPORT", str(FIXTURES / "json_leaderboard_v1323.txt"))
    plan = remote.plan(str(SAMPLES / "950_remote_ok.py"))
    assert any("no per-shape timings" in w for w in plan.warnings)
    outcome = remote.send(plan, poll_s=0.05)
    assert outcome.exit_code == 0
    ranked = [r for r in ledger.read() if r["mode"] == "leaderboard"]
    assert [(r["remote"]["run"], r["remote"]["score"], r["remote"]["score_approximate"]) for r in ranked] == [
        ("public", 0.00009214, False), ("secret", 0.00009251, False)]
    assert all(r["results"] == [] and r["versions"]["popcorn"] == "1.3.23" for r in ranked)


def test_server_rate_limit_is_recorded_and_remembered(popcorn_env, monkeypatch):
    monkeypatch.setenv("POPCORN_STANDIN_ERROR", "Rate limit exceeded: 1/1 leaderboard submissions per hour. "
                                                "Try again in 3273s. (Status Code: 400)")
    monkeypatch.setenv("HARNESS_RATE_LIMIT_LEADERBOARD", "3")
    outcome = remote.send(remote.plan(str(SAMPLES / "950_remote_ok.py")), poll_s=0.05)
    assert outcome.error.kind == "rate_limit" and outcome.exit_code == 1
    (record,) = ledger.read()
    assert record["status"] == "error" and record["remote"]["error_kind"] == "rate_limit"
    assert "try again in 55 min" in record["reason"]
    again = remote.plan(str(SAMPLES / "950_remote_ok.py"))
    assert [p.kind for p in again.problems] == ["rate_limit"]
    forced = remote.plan(str(SAMPLES / "950_remote_ok.py"), force=True)
    assert forced.problems == [] and any("--force" in w for w in forced.warnings)


def test_timeout_and_unparseable_reports_are_errors(popcorn_env, monkeypatch):
    monkeypatch.setenv("POPCORN_STANDIN_SLEEP", "30")
    monkeypatch.setenv("HARNESS_RATE_LIMIT_TEST", "100")
    outcome = remote.send(remote.plan(str(SAMPLES / "950_remote_ok.py"), mode="test"), timeout_s=1, poll_s=0.05)
    assert outcome.error.kind == "timeout" and "no report after 1 s" in str(outcome.error)
    monkeypatch.setenv("POPCORN_STANDIN_SLEEP", "0")
    garbage = popcorn_env / "garbage.txt"
    garbage.write_text("Submission accepted, nothing else\n")
    monkeypatch.setenv("POPCORN_STANDIN_REPORT", str(garbage))
    outcome = remote.send(remote.plan(str(SAMPLES / "950_remote_ok.py"), mode="test"), poll_s=0.05)
    assert outcome.error.kind == "unparsed" and "raw output kept in" in str(outcome.error)
    assert [(r["status"], r["remote"]["error_kind"]) for r in ledger.read()] == [("error", "timeout"),
                                                                                 ("error", "unparsed")]


def test_not_installed_and_not_registered(popcorn_env, monkeypatch, tmp_path):
    empty = tmp_path / "empty_bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    (problem,) = remote.plan(str(SAMPLES / "950_remote_ok.py")).problems
    assert problem.kind == "not_installed" and "github.com/gpu-mode/popcorn-cli" in str(problem)
    monkeypatch.setenv("PATH", f"{STANDIN_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    (Path(os.environ["HOME"]) / ".popcorn.yaml").unlink()
    (problem,) = remote.plan(str(SAMPLES / "950_remote_ok.py")).problems
    assert problem.kind == "not_registered" and problem.exit_code == 2 and ".popcorn.yaml" in str(problem)


def test_bad_usage_is_exit_2(popcorn_env):
    for kwargs in ({"argument": "no/such/file.py"}, {"argument": str(SAMPLES / "950_remote_ok.py"), "mode": "x"}):
        with pytest.raises(remote.RemoteError) as caught:
            remote.plan(**kwargs)
        assert caught.value.exit_code == 2


# ------------------------------------------------------------------------------------ end to end (CLI, make)

def cli_env(tmp_path, report=None, expect=None, **extra):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / ".popcorn.yaml").write_text("cli_id: test-only\n")
    env = {**os.environ, "HOME": str(home), "PATH": f"{STANDIN_BIN}{os.pathsep}{os.environ['PATH']}",
           "POPCORN_STANDIN_ARGS_LOG": str(tmp_path / "args.jsonl"), **extra}
    if report:
        env["POPCORN_STANDIN_REPORT"] = str(FIXTURES / report)
    if expect:
        env["POPCORN_STANDIN_EXPECT"] = json.dumps(expect)
    return env


def remote_records(tmp_path):
    return [r for r in ledger.read() if r.get("source") == "remote"]


@pytest.mark.slow
def test_make_submit_end_to_end(tmp_path):
    path = SAMPLES / "950_remote_ok.py"
    env = cli_env(tmp_path, "leaderboard_success_v1315.txt",
                  {"leaderboard": "amd-mixed-mla", "gpu": "MI355X", "mode": "leaderboard", "file": path.name})
    done = subprocess.run(["make", "-s", "submit", f"N={path}"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gate local test run: ok" in done.stdout and "score (public):" in done.stdout
    (call,) = standin_calls(tmp_path)
    report_dir = next(paths.remote_dir().glob("*_950_remote_ok_leaderboard"))
    assert call == ["submit", "--no-tui", "--leaderboard", "amd-mixed-mla", "--gpu", "MI355X", "--mode",
                    "leaderboard", "--output", str(report_dir / "report.txt"), str(path)]
    records = remote_records(tmp_path)
    assert len(ledger.read()) == len(records)  # the gate's local run recorded nothing
    assert [(r["remote"]["run"], r["mode"], r["status"]) for r in records] == [
        ("public", "test", "pass"), ("public", "benchmark", "pass"), ("public", "leaderboard", "pass"),
        ("secret", "test", "pass"), ("secret", "benchmark", "pass"), ("secret", "leaderboard", "pass")]
    assert {r["submission"]["path"] for r in records} == {"tests/samples/remote/950_remote_ok.py"}
    assert records[2]["results"][7]["stats"]["mean"] == pytest.approx(2_460_000)
    board = tmp_path / "scoreboard.md"
    shown = subprocess.run(HARNESS + ["scoreboard", "--ledger", str(paths.ledger_file()), "--output", str(board),
                                      "--chart", str(tmp_path / "chart.png")], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    page = board.read_text()
    assert "MI355X (remote)" in page and "950" in page
    assert "2460" in page or "2.46" in page  # the ranked (256, 8192) mean as printed


def test_gate_refuses_a_file_that_fails_locally(tmp_path):
    env = cli_env(tmp_path, "test_success_v1315.txt")
    done = subprocess.run(HARNESS + ["submit", str(SAMPLES / "951_remote_wrong.py"), "--mode", "test"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gate local test run: FAIL" in done.stdout and "gate verdict: failed: refused" in done.stdout
    assert standin_calls(tmp_path) == [] and remote_records(tmp_path) == []


@pytest.mark.parametrize("name, rule", [("952_remote_forbidden_word.py", "FORBIDDEN_WORD"),
                                        ("953_remote_late_directives.py", "DIRECTIVE_PLACEMENT")])
def test_gate_refuses_what_the_server_would_reject(tmp_path, name, rule):
    env = cli_env(tmp_path, "test_success_v1315.txt")
    done = subprocess.run(HARNESS + ["submit", str(SAMPLES / name), "--mode", "test", "--leaderboard",
                                     "amd-mixed-mla", "--gpu", "MI355X"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gate lint: FAIL" in done.stdout and rule in done.stdout
    assert standin_calls(tmp_path) == [] and remote_records(tmp_path) == []


@pytest.mark.slow  # a whole local test run in a child
def test_dry_run_prints_the_command_and_sends_nothing(tmp_path):
    path = SAMPLES / "950_remote_ok.py"
    env = cli_env(tmp_path, "test_success_v1315.txt")
    done = subprocess.run(HARNESS + ["submit", str(path), "--dry-run"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    command = next(line for line in done.stdout.splitlines() if line.startswith("command: "))
    assert command.startswith(f"command: {STANDIN_BIN / 'popcorn-cli'} submit --no-tui --leaderboard amd-mixed-mla "
                              "--gpu MI355X --mode leaderboard --output ")
    assert command.endswith(f"_950_remote_ok_leaderboard/report.txt {path}")  # an outside file: named, not numbered
    assert "gate local test run: ok" in done.stdout and "passed here on cpu" in done.stdout
    assert "gate: running 950_remote_ok.py's test cases here..." in done.stderr  # piped: the slow step is said
    assert "gate verdict: passed" in done.stdout and "nothing sent" in done.stdout
    assert standin_calls(tmp_path) == [] and ledger.read() == []
    assert not paths.remote_dir().exists()


def emulated_record(status: str, reason: str = "") -> str:
    """What `harness run FILE --mode test --json` prints for a run on the emulator (the fields the gate reads)."""
    device = {"name": EMULATOR_MARK, "arch": "gfx950-emulated", "backend": "cpu"}
    return json.dumps([{"status": status, "reason": reason, "device": device, "cases": "small"}])


@pytest.mark.parametrize("status, exit_code", [("pass", 0), ("fail", 1)])
def test_on_a_cpu_the_gate_runs_a_hip_file_on_the_emulator_as_harness_run_does(monkeypatch, status, exit_code):
    """The emulated run itself takes minutes (test_make_submit_runs_120_emulated): here the child is a stand-in."""
    from harness import platform as platforms
    from harness import submission as subs
    from harness.remote import gate

    monkeypatch.setattr(platforms, "_gpu_device_files", lambda: False)  # this machine as one without a GPU
    asked = []

    def harness_run_test(path):
        asked.append(path)
        return subprocess.CompletedProcess([], exit_code, emulated_record(status, "case 1: wrong"), "fail: case 1")

    monkeypatch.setattr(gate, "harness_run_test", harness_run_test)
    sub = subs.resolve(str(SAMPLES / "954_remote_hip.py"))
    verdict = gate.run_gate(sub, sub.path.read_text(), "amd-mixed-mla")
    names = [(check.name, check.ok) for check in verdict.checks]
    assert names == [("lint", True), ("header", True), ("gfx950 compile", True), ("local test run", status == "pass")]
    assert asked == [sub.path] and verdict.ok == (status == "pass")
    said = verdict.checks[-1].details[0]
    assert f"on {EMULATOR_MARK}, small cases" in said and ("passed" if status == "pass" else "fail: case 1") in said


@pytest.mark.emulator_e2e
def test_make_submit_runs_120_emulated(tmp_path):
    env = cli_env(tmp_path, "test_success_v1315.txt")
    done = subprocess.run(["make", "-s", "submit", "N=120", "DRY_RUN=1"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"gate local test run: ok `harness run 120_hip_fp8_mfma.py --mode test` passed here on {EMULATOR_MARK}, " \
           "small cases" in done.stdout
    assert "gate verdict: passed" in done.stdout and standin_calls(tmp_path) == []


def test_the_gate_refuses_a_hip_file_that_does_not_compile_for_gfx950(tmp_path):
    broken = REPO / "tests" / "samples" / "hip" / "syntax_error.py"
    env = cli_env(tmp_path, "test_success_v1315.txt")
    done = subprocess.run(HARNESS + ["submit", str(broken), "--dry-run", "--leaderboard", "amd-mixed-mla",
                                     "--gpu", "MI355X"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gate gfx950 compile: FAIL HIP: compile_error" in done.stdout and "syntax_error.py:15" in done.stdout
    assert "gate verdict: failed: refused" in done.stdout
    forced = subprocess.run(HARNESS + ["submit", str(broken), "--dry-run", "--force", "--leaderboard",
                                       "amd-mixed-mla", "--gpu", "MI355X"], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=300)
    assert forced.returncode == 0 and "failed (--force: sending anyway)" in forced.stdout


def test_remote_doc_says_the_gate_compiles_hip_only_files():
    from harness import submission as subs
    from harness.remote import gate

    text = (helpers.REPO / "docs" / "REMOTE.md").read_text(encoding="utf-8")
    assert "HIP-only file gets the static checks only" not in " ".join(text.split())
    from harness.platform import detect

    sub = subs.resolve("120")  # on the plain CPU, as where the emulator's toolchain is missing
    verdict = gate.run_gate(sub, sub.path.read_text(), "amd-mixed-mla", here=detect("cpu"))
    compiled = [check for check in verdict.checks if check.name == "gfx950 compile"]
    assert compiled and compiled[0].ok, [vars(c) for c in verdict.checks]
    assert "HIP" in compiled[0].details[0]
    step = text[text.index("## The local gate"):text.index("If the gate fails")]
    assert "HIP" in step and "compile" in step and "refuse" in step
