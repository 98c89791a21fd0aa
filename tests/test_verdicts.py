"""Verdicts that never mislead: a spent time limit is `timeout`, a file the server would refuse is `rejected`,
nothing compiled is no pass, and a variant that cannot be built for a target never reads as compiled."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.compile import aot
from harness.results import records, scoreboard
from harness.run import protocol

REPO = Path(__file__).resolve().parent.parent
HARNESS = [sys.executable, "-c", "from harness.cli import main; main()"]


def harness(*args, env=None):
    return subprocess.run(HARNESS + [str(a) for a in args], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def test_a_run_whose_limit_was_spent_before_its_cases_is_a_timeout():
    """`harness run 1 --mode leaderboard --timeout 1`: the warm-up spends the limit, no case runs (it was a pass)."""
    done = harness("run", "1", "--mode", "leaderboard", "--timeout", "1", "--device", "cpu", "--json")
    assert done.returncode == 1, done.stderr[-2000:]
    (record,) = json.loads(done.stdout)
    assert record["status"] == "timeout" and "time limit" in record["reason"]
    assert {case["status"] for case in record["results"]} == {"not run"}


def test_summarize_calls_unrun_cases_a_timeout_and_a_case_limit_too():
    spec = {"batchsize": 1, "qseqlen": 1, "kvseqlen": 64, "seed": 1}
    ran = protocol.CaseResult(spec=spec, status="pass")
    unrun = protocol.CaseResult(spec=spec, status="not run", message="not run: the run's time limit was spent")
    assert protocol.summarize([ran, unrun]) == ("timeout", "case 2 (batchsize: 1; qseqlen: 1; kvseqlen: 64; "
                                                "seed: 1): not run: the run's time limit was spent")
    assert protocol.summarize([protocol.CaseResult(spec=spec, status="timeout", message="x")])[0] == "timeout"


@pytest.mark.slow
def test_a_file_the_server_would_reject_is_never_a_plain_pass(tmp_path):
    sample = REPO / "tests" / "samples" / "bad" / "forbidden_word.py"
    one_case = tmp_path / "one_case.yml"  # the verdict is the file's, not a case's: no 2x4500 and stress cases
    one_case.write_text("- {batchsize: 1, qseqlen: 1, kvseqlen: 64, seed: 7}\n")
    done = harness("run", sample, "--mode", "test", "--device", "cpu", "--cases", one_case, "--json")
    assert done.returncode == 1
    (record,) = json.loads(done.stdout)
    assert record["status"] == "rejected" and record["reason"].startswith(records.REJECTED_PREFIX)
    allowed = harness("run", sample, "--mode", "test", "--device", "cpu", "--cases", one_case, "--allow-rejected")
    assert allowed.returncode == 0 and "rejected" in allowed.stdout
    (table,) = scoreboard.build_tables(records.load(tmp_path / "results" / "ledger.jsonl"))
    assert [(listed.status, listed.label) for listed in table.failing] == [("rejected", "tests/samples/bad/"
                                                                              "forbidden_word.py")]
    assert "rejected" in scoreboard.render_table(table)


def test_nothing_compiled_is_not_a_pass(tmp_path):
    done = harness("compile", "1")
    assert done.returncode == 0 and "skip" in done.stdout and "nothing compiled" in done.stdout
    (record,) = records.load(tmp_path / "results" / "ledger.jsonl")
    assert record["status"] == "skip"
    verified = scoreboard.where_verified([record])
    assert "compiled for gfx950" not in verified["001_torch_reference"]


AMD_ASM_KERNEL = textwrap.dedent('''
    import triton
    import triton.language as tl

    @triton.jit
    def amd_move(x_ptr, y_ptr):
        x = tl.load(x_ptr + tl.arange(0, 64))
        y = tl.inline_asm_elementwise("v_mov_b32 $0, $1", "=v,v", [x], dtype=tl.float32, is_pure=True, pack=1)
        tl.store(y_ptr + tl.arange(0, 64), y)

    AOT_SPECS = [
        {"kernel": "amd_move", "label": "AMD asm", "signature": {"x_ptr": "*fp32", "y_ptr": "*fp32"}},
        {"kernel": "amd_move", "label": "AMD asm, declared", "signature": {"x_ptr": "*fp32", "y_ptr": "*fp32"},
         "targets": ["gfx950"]},
    ]
''')


def test_a_variant_that_cannot_be_built_for_the_target_never_reads_as_compiled(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cold"))  # a warm cache hit prints no compiler errors
    path = tmp_path / "amd_asm.py"
    path.write_text(AMD_ASM_KERNEL)
    undeclared, declared = aot.compile_submission(path, "sm90")
    assert undeclared.error and undeclared.error.startswith("cannot be built for sm90:") and not undeclared.skipped
    assert declared.skipped and "gfx950 only" in declared.error
    assert "could not allocate" not in capfd.readouterr().err  # the compiler's flood is caught, not printed


def test_the_harnesss_own_writes_never_make_a_checkout_dirty(tmp_path):
    from harness.run import session

    for name in ("results/ledger.jsonl", "scoreboard.md", "reference.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("v1\n")
    for step in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c"]):
        subprocess.run(["git", *step], cwd=tmp_path, check=True, capture_output=True)
    for name in ("results/ledger.jsonl", "scoreboard.md"):
        (tmp_path / name).write_text("v2\n")
    assert session.git_checkout(tmp_path)["dirty"] is False
    (tmp_path / "reference.py").write_text("v2\n")
    assert session.git_checkout(tmp_path)["dirty"] is True


def version_1(status: str, reason: str, cases: list) -> dict:
    spec = {"batchsize": 1, "qseqlen": 1, "kvseqlen": 64, "seed": 1}
    return {"schema": 1, "submission": {"path": "x.py", "number": None}, "mode": "leaderboard",
            "device": {"name": "cpu (x86_64)"}, "status": status, "reason": reason,
            "results": [{"spec": spec, "status": s, "message": m} for s, m in cases]}


def test_version_1_records_are_upgraded_explicitly():
    spent = records.checked(version_1("pass", "", [("skip", "not run: the run's time limit was spent")] * 2))
    assert spent["schema"] == 2 and spent["status"] == "timeout"
    assert [case["status"] for case in spent["results"]] == ["not run", "not run"]
    limit = records.checked(version_1("error", "x", [("timeout", "exceeded"), ("skip", "not run: an earlier")]))
    assert limit["status"] == "timeout"
    crashed = records.checked(version_1("error", "x", [("error", "SIGSEGV"), ("timeout", "exceeded")]))
    assert crashed["status"] == "error"
    refused = records.checked(version_1("pass", f"{records.REJECTED_PREFIX}: line 3: X", [("pass", "")]))
    assert refused["status"] == "rejected"
    skipped = records.checked(version_1("skip", "needs ROCm", [("skip", "needs ROCm")]))
    assert skipped["status"] == "skip" and skipped["results"][0]["status"] == "skip"


DYING_COMPILE = textwrap.dedent('''
    import os

    import triton
    import triton.language as tl

    @triton.jit
    def copy(x_ptr, y_ptr):
        tl.store(y_ptr + tl.arange(0, 64), tl.load(x_ptr + tl.arange(0, 64)))

    class Dying(dict):
        """An entry whose compile ends the process, as LLVM's fatal errors do."""
        def get(self, key, default=None):
            if key == "num_warps":
                os._exit(1)
            return super().get(key, default)

    SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32"}
    AOT_SPECS = [Dying(kernel="copy", label="dies", signature=SIGNATURE),
                 {"kernel": "copy", "label": "builds", "signature": SIGNATURE}]
''')


def test_a_variant_whose_compile_kills_the_worker_fails_and_the_others_still_compile(tmp_path):
    from harness import platform as platforms, submission as subs
    from harness.run import compiling
    from harness.sandbox import guard

    path = tmp_path / "dying.py"
    path.write_text(DYING_COMPILE)
    outcome = compiling.compile_guarded(subs.resolve(str(path)), "gfx950", platforms.detect("cpu"),
                                        guard.choose("off"))
    dies, builds = outcome.triton
    assert dies.error.startswith("the compiler died building it for gfx950") and not dies.skipped
    assert builds.error is None and builds.registers and outcome.failed
