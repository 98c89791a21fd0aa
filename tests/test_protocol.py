"""run/protocol.py + run/worker.py + run/child.py, through real child processes on small CPU cases."""
import importlib.util
import time
from pathlib import Path

import pytest

from harness.results import ledger
from harness.run import protocol
from harness.run import worker
from harness import platform as platforms
from harness import submission as subs

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "tests" / "samples"
CPU = platforms.detect("cpu")
TINY = {"batchsize": 1, "qseqlen": 1, "kvseqlen": 64, "seed": 11}
TINY_2 = {"batchsize": 1, "qseqlen": 1, "kvseqlen": 32, "seed": 5}
# The official semantics with fewer calls, so that the CPU suite stays fast.
QUICK = protocol.Budgets(benchmark_warmup=protocol.Budget(3, 10e7), benchmark=protocol.Budget(5, 50e9),
                         leaderboard_warmup=protocol.Budget(3, 1e7), leaderboard=protocol.Budget(4, 30e9))


def evaluate(sample, mode, specs, tmp_path, timeout_s=120.0, secret=None, case_timeout_s=None):
    return protocol.evaluate(subs.from_path(SAMPLES / sample), CPU, mode, specs, cases_name="test", flush="fast",
                             timeout_s=timeout_s, case_timeout_s=case_timeout_s, secret=secret, budgets=QUICK,
                             log_dir=tmp_path)


# -- seeds --------------------------------------------------------------------------------------

def test_seed_combination_is_the_cantor_pairing():
    assert protocol.combine_seed(1, 2) == 7
    assert protocol.combine_seed(4220, 0) == 8910530
    assert protocol.combine_seed(11, 5) == 147


def test_cases_keep_their_public_spec_and_run_with_the_combined_seed():
    (case,) = protocol.make_cases([TINY], secret=5)
    assert case.spec == TINY
    assert case.args == {**TINY, "seed": 147}
    (plain,) = protocol.make_cases([TINY], secret=None)
    assert plain.args == TINY


def test_secret_seed_is_read_from_the_environment():
    assert protocol.secret_seed({}) is None
    assert protocol.secret_seed({"POPCORN_SEED": "77"}) == 77
    with pytest.raises(ValueError, match="POPCORN_SEED must be an integer"):
        protocol.secret_seed({"POPCORN_SEED": "abc"})


def test_child_environment():
    env = worker.child_environment("cpu", triton_interpreter=True, base={"POPCORN_SEED": "9", "PATH": "/bin"})
    assert "POPCORN_SEED" not in env
    assert env["TRITON_INTERPRET"] == "1" and env["MLA_DEVICE"] == "cpu" and env["CUDA_VISIBLE_DEVICES"] == ""
    assert env["PYTHONPATH"].split(":")[0] == str(REPO)
    assert "TRITON_INTERPRET" not in worker.child_environment("cuda", triton_interpreter=False, base={})


def test_exit_reasons():
    assert worker.exit_reason(-11) == "killed by signal 11 (SIGSEGV)"
    assert worker.exit_reason(-9) == "killed by signal 9 (SIGKILL)"
    assert worker.exit_reason(3) == "exited with code 3"


# -- the modes, end to end ------------------------------------------------------------------------

def test_test_mode_uses_the_secret_seed_hides_it_and_copies_the_submissions_notes(tmp_path, monkeypatch):
    import reference

    monkeypatch.setenv("POPCORN_SEED", "5")
    run = evaluate("reference_call.py", "test", [TINY], tmp_path, secret=5)
    (result,) = run.results
    assert (run.status, result.status) == ("pass", "pass")
    assert result.spec == TINY  # reports show the public seed
    expected_q = reference.generate_input(**{**TINY, "seed": 147}, device="cpu")[0]
    assert result.notes["q_sum"] == pytest.approx(float(expected_q.float().sum()), rel=1e-6)
    assert result.notes["path"] == "reference"
    assert any("POPCORN_SEED" in w for w in run.warnings)


def test_the_secret_seed_never_reaches_the_submission(tmp_path, monkeypatch):
    monkeypatch.setenv("POPCORN_SEED", "5")
    run = evaluate("seed_probe.py", "test", [TINY], tmp_path, secret=5)
    assert run.results[0].notes["popcorn_seed_visible"] is False
    assert run.status == "rejected" and "EVALUATOR_MODE_BRANCH" in run.reason  # reading it is refused by the server


@pytest.mark.slow
def test_caching_by_input_passes_benchmark_mode_and_fails_leaderboard_mode(tmp_path):
    bench = evaluate("cache_by_shape.py", "benchmark", [TINY, TINY_2], tmp_path)
    assert [r.status for r in bench.results] == ["pass", "pass"]
    assert all(r.stats.runs == 5 for r in bench.results)
    board = evaluate("cache_by_shape.py", "leaderboard", [TINY, TINY_2], tmp_path)
    assert board.status == "fail"
    assert [r.status for r in board.results] == ["fail", "not run"]  # stops at the first failing case
    assert board.results[0].message.startswith(f"timed call 1 (seed {TINY['seed'] + 13}): ")
    assert "stops at the first failure" in board.results[1].message


def test_an_honest_submission_passes_leaderboard_mode_with_stats(tmp_path):
    run = evaluate("reference_call.py", "leaderboard", [TINY], tmp_path)
    assert run.status == "pass"
    stats = run.results[0].stats
    assert stats.runs in (3, 4)  # the official rule may stop after 3 calls once err/mean < 0.1%
    assert 0 < stats.best <= stats.mean <= stats.worst
    assert protocol.geomean_ns(run) == pytest.approx(stats.mean)


def test_a_wrong_answer_fails_test_mode(tmp_path):
    run = evaluate("wrong_output.py", "test", [TINY], tmp_path)
    assert run.status == "fail"
    assert run.results[0].message.startswith("Number of mismatched elements")
    assert run.reason.startswith("case 1 (batchsize: 1; qseqlen: 1; kvseqlen: 64; seed: 11): Number of mismatched")


HANG = {"batchsize": 3, "qseqlen": 1, "kvseqlen": 16, "seed": 1}
CRASH = {"batchsize": 2, "qseqlen": 1, "kvseqlen": 16, "seed": 2}


@pytest.mark.slow
def test_with_a_case_limit_a_hang_and_a_crash_are_reported_and_the_next_case_still_runs(tmp_path):
    run = evaluate("crash_and_hang.py", "test", [HANG, CRASH, TINY], tmp_path, case_timeout_s=3)
    assert [(r.status, r.message) for r in run.results] == [
        ("timeout", "exceeded the 3 s case limit"),
        ("error", "killed by signal 11 (SIGSEGV)"),
        ("pass", run.results[2].message),
    ]
    assert run.status == "error" and run.failed
    assert run.log_path.parent == tmp_path and "worker started" in run.log_path.read_text()


def test_the_run_limit_bounds_all_cases_together_and_a_timeout_ends_the_run(tmp_path):
    started = time.monotonic()
    run = evaluate("crash_and_hang.py", "test", [HANG, CRASH, TINY], tmp_path, timeout_s=3)
    assert time.monotonic() - started < 60  # one limit (plus the worker's start), not one per case
    assert [(r.status, r.message) for r in run.results] == [
        ("timeout", "exceeded the run's 3 s time limit (it bounds all cases of a submission together)"),
        ("not run", "not run: an earlier case timed out"),
        ("not run", "not run: an earlier case timed out"),
    ]
    assert run.status == "timeout"


def test_the_run_limit_is_shared_by_the_cases(tmp_path):
    clock = iter([0.0, 1.0, 2.5, 4.0]).__next__
    limit = protocol.TimeLimit(3.0, clock=clock)
    assert limit.next_call_s() == 2.0  # 1 s of the 3 already spent
    assert limit.next_call_s() == 0.5
    assert limit.remaining_s() == -1.0
    capped = protocol.TimeLimit(100.0, case_s=5.0, clock=lambda: 0.0)
    assert capped.next_call_s() == 5.0 and capped.timeout_message(5.0) == "exceeded the 5 s case limit"


def test_case_warnings_carry_one_prefix():
    result = protocol.CaseResult(spec=TINY, status="pass", message="WARNING: mismatch_ratio=0.02 passes\nok")
    assert protocol.case_warnings([result]) == ["case 1: mismatch_ratio=0.02 passes"]


def test_an_exception_names_the_submission_line_and_the_log_tail_shows_the_traceback(tmp_path):
    run = evaluate("raises.py", "test", [TINY], tmp_path)
    assert [r.status for r in run.results] == ["error"]
    message = run.results[0].message
    assert message == "ValueError: this kernel does not support that shape (submission line 8)"
    assert "Traceback" in run.results[0].log_tail


def test_triton_submissions_run_through_the_interpreter_on_a_cpu(tmp_path):
    run = evaluate("triton_interpreted.py", "test", [TINY], tmp_path)
    assert run.status == "pass"
    assert run.results[0].notes["TRITON_INTERPRET"] == "1"


def test_a_submission_this_machine_cannot_run_is_skipped_with_the_reason(tmp_path):
    run = evaluate("hip_inline.py", "benchmark", [TINY, TINY_2], tmp_path)
    assert run.status == "skip" and not run.failed
    assert run.reason.startswith("needs ROCm: HIP source compiled with load_inline for gfx950; "
                                 "this machine is cpu (x86_64); ")
    assert [r.status for r in run.results] == ["skip", "skip"]
    assert list(tmp_path.iterdir()) == []  # no worker was started


def test_profile_mode_returns_the_profiler_table(tmp_path):
    run = evaluate("reference_call.py", "profile", [TINY], tmp_path)
    assert run.status == "pass"
    assert "Self CPU" in run.results[0].report


def test_record_follows_the_ledger_schema(tmp_path):
    run = evaluate("hip_inline.py", "test", [TINY], tmp_path)
    record = protocol.record(run)
    assert record["source"] == "local" and record["status"] == "skip" and record["standin"] is None
    assert record["submission"] == {"number": None, "path": "tests/samples/hip_inline.py",
                                    "sha256": subs.from_path(SAMPLES / "hip_inline.py").sha256,
                                    "requirements": ["hip", "torch"], "optional": [],
                                    "numbered": False}
    assert record["device"] == {"name": CPU.device_name, "arch": "cpu", "backend": "cpu"}
    assert record["flush"] == "none"  # no flush on a CPU
    assert record["results"][0] == {"spec": TINY, "status": "skip", "message": run.reason, "stats": None, "notes": {},
                                 "accuracy": None}
    ledger.append(record, tmp_path / "ledger.jsonl")
    assert ledger.read(tmp_path / "ledger.jsonl")[0]["run_id"] == record["run_id"]


# -- bench/tools/protocol_agreement.py's parsing (the script itself runs on the GPU device) ------------------

def load_agreement_script():
    spec = importlib.util.spec_from_file_location("protocol_agreement", REPO / "bench" / "tools" / "protocol_agreement.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


POPCORN_LOG = """benchmark-count: 2
benchmark.0.spec: batchsize: 4; qseqlen: 1; kvseqlen: 1024; seed: 4217
benchmark.0.runs: 120
benchmark.0.mean: 20400.5
benchmark.0.std: 300.0
benchmark.0.err: 27.4
benchmark.0.best: 20000.0
benchmark.0.worst: 21000.0
benchmark.1.spec: batchsize: 4; qseqlen: 1; kvseqlen: 8192; seed: 4220
benchmark.1.status: fail
benchmark.1.error: Number of mismatched elements: 3
check: fail
"""


def test_agreement_script_parses_eval_py_output():
    script = load_agreement_script()
    parsed = script.parse_popcorn_log(POPCORN_LOG)
    assert parsed["check"] == "fail"
    shapes = script.official_results(parsed)
    assert shapes[0]["spec"] == {"batchsize": 4, "qseqlen": 1, "kvseqlen": 1024, "seed": 4217}
    assert shapes[0]["mean"] == 20400.5 and shapes[0]["runs"] == 120
    assert shapes[1]["mean"] is None and "mismatched" in shapes[1]["error"]


def test_agreement_script_compares_geomeans():
    script = load_agreement_script()
    assert script.geomean([10.0, 40.0]) == pytest.approx(20.0)
    assert script.geomean([10.0, None]) is None
    rows, ratios = script.compare({"official": [10.0, 40.0], "harness": [11.0, 44.0]}, baseline="official")
    assert ratios["harness"] == pytest.approx(1.1)
    assert rows[0]["harness"] == 11.0


# -- on a GPU (the device machine) ------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("flush", ["fast", "official"])
def test_benchmark_and_leaderboard_on_the_gpu(tmp_path, flush):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    gpu = platforms.detect("cuda")
    case = {"batchsize": 4, "qseqlen": 1, "kvseqlen": 1024, "seed": 4217}
    honest = protocol.evaluate(subs.from_path(SAMPLES / "reference_call.py"), gpu, "benchmark", [case],
                               cases_name="test", flush=flush, timeout_s=300, budgets=QUICK, log_dir=tmp_path)
    assert honest.status == "pass" and honest.flush == flush
    assert 0 < honest.results[0].stats.best <= honest.results[0].stats.mean
    cheat = protocol.evaluate(subs.from_path(SAMPLES / "cache_by_shape.py"), gpu, "leaderboard", [case],
                              cases_name="test", flush=flush, timeout_s=300, budgets=QUICK, log_dir=tmp_path)
    assert cheat.status == "fail"
