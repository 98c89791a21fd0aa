"""The `harness` commands through click's runner: exit codes, one-line errors, what lands in the ledger.

(scoreboard, diff, compile and submit have their command tests beside their modules' tests.)"""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import cli, ledger

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "tests" / "samples"


@pytest.fixture
def cli_env(tmp_path):
    cases_file = tmp_path / "one.txt"
    cases_file.write_text("batchsize: 1; qseqlen: 1; kvseqlen: 64; seed: 11\n")
    return tmp_path, str(cases_file)


def invoke(*args):
    return CliRunner().invoke(cli.main, list(args))


def test_run_exit_codes_and_ledger_records(cli_env):
    tmp_path, cases_file = cli_env
    passed = invoke("run", str(SAMPLES / "reference_call.py"), "--device", "cpu", "--cases", cases_file)
    assert passed.exit_code == 0, passed.output
    assert "pass" in passed.output
    failed = invoke("run", str(SAMPLES / "wrong_output.py"), str(SAMPLES / "aiter_decode.py"),
                    "--device", "cpu", "--cases", cases_file, "--json")
    assert failed.exit_code == 1
    printed = json.loads(failed.stdout)
    assert [r["status"] for r in printed] == ["fail", "skip"]
    records = ledger.read()
    assert [r["status"] for r in records] == ["pass", "fail", "skip"]
    assert records[0]["cases"] == cases_file and records[0]["mode"] == "test"


@pytest.mark.parametrize("args, message", [
    ([], "name at least one submission"),
    (["99999"], "error: no submission numbered 99999"),
    (["1", "--all"], "not both"),
    ([str(SAMPLES / "reference_call.py"), "--cases", "nowhere.yml"], "error: --cases must be"),
    ([str(SAMPLES / "reference_call.py"), "--mode", "script"], "Invalid value for '--mode'"),
])
def test_bad_usage_exits_2_with_one_line(cli_env, args, message):
    result = invoke("run", *args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_skip_only_exits_0(cli_env):
    _, cases_file = cli_env
    result = invoke("run", str(SAMPLES / "hip_inline.py"), "--device", "cpu", "--cases", cases_file)
    assert result.exit_code == 0
    assert "skip" in result.output and "needs ROCm" in result.output


def test_list_and_doctor(cli_env):
    listed = invoke("list", "--device", "cpu")
    assert listed.exit_code == 0, listed.output
    doctor = invoke("doctor", "--device", "cpu")
    assert doctor.exit_code == 0, doctor.output
    assert "cpu" in doctor.output and "TRITON_INTERPRET" in doctor.output and "needs ROCm" in doctor.output
