"""The aiter stand-in samples (tests/samples/aiter/standin/): each runs to the verdict its EXPECT-STANDIN line states.

Keys: test, leaderboard, stress (the stress cases as the verdict), same_batch_other_kv, cpu (anything on a CPU),
gpu-test / gpu-leaderboard (official shapes on a GPU, marked gpu); values pass, pass:warned, rejected (every case
passes, and the server's rules would refuse the file), fail[:word], error[:word] (fail and error both mean the run
failed; the word must be in the failing case's message).
"""
import re
from pathlib import Path

import pytest
import torch

from harness import platform as platforms
from harness import submission as subs
from harness.run import cases, protocol

SAMPLES = Path(__file__).resolve().parent / "samples" / "aiter" / "standin"
CPU = platforms.detect("cpu")
QUICK = protocol.Budgets(benchmark_warmup=protocol.Budget(3, 10e7), benchmark=protocol.Budget(5, 50e9),
                         leaderboard_warmup=protocol.Budget(3, 1e7), leaderboard=protocol.Budget(20, 30e9))
SHORT_AND_LONG = [{"batchsize": 1, "qseqlen": 1, "kvseqlen": 64, "seed": 11},
                  {"batchsize": 2, "qseqlen": 1, "kvseqlen": 1500, "seed": 13}]  # long: past the hacks' 1024 switch
CPU_RUNS = {  # key -> (mode, specs)
    "test": ("test", SHORT_AND_LONG),
    "cpu": ("test", SHORT_AND_LONG[:1]),
    "leaderboard": ("leaderboard", [{"batchsize": 2, "qseqlen": 1, "kvseqlen": 300, "seed": 5}]),
    "stress": ("test", cases.stress(SHORT_AND_LONG[1:])),
    "same_batch_other_kv": ("test", [{"batchsize": 2, "qseqlen": 1, "kvseqlen": 300, "seed": 5},
                                     {"batchsize": 2, "qseqlen": 1, "kvseqlen": 700, "seed": 6}]),
}
NOISE_WARNING = "x the reference's own quantization noise"


def expectations(path: Path) -> dict:
    line = next(line for line in path.read_text().splitlines() if "EXPECT-STANDIN" in line)
    return dict(item.split("=", 1) for item in line.split("EXPECT-STANDIN", 1)[1].split())


def check_verdict(run, expected: str, where: str) -> None:
    verdict, _, word = expected.partition(":")
    first_bad = next((r for r in run.results if r.status != "pass"), None)
    if verdict == "rejected":
        assert run.status == "rejected" and first_bad is None, f"{where}: {run.status} {run.reason}"
        return
    if verdict == "pass":
        assert not run.failed, f"{where}: {run.status} {first_bad and first_bad.message}"
        if word == "warned":
            assert any(NOISE_WARNING in w for w in run.warnings), f"{where}: no noise warning in {run.warnings}"
        return
    assert run.failed, f"{where}: expected {expected}, got {run.status}"
    if word:
        assert word.replace("-", " ").lower() in first_bad.message.lower(), f"{where}: {first_bad.message}"


def cpu_cases():
    for path in sorted(SAMPLES.glob("*.py")):
        for key, expected in expectations(path).items():
            if key in CPU_RUNS:
                # leaderboard mode re-checks 20 timed calls: 10-25 s each on the 2-core machine
                marks = [pytest.mark.slow] if key == "leaderboard" else []
                yield pytest.param(path, key, expected, id=f"{path.stem}-{key}", marks=marks)


@pytest.mark.parametrize("path, key, expected", list(cpu_cases()))
def test_sample_verdict_on_the_cpu(tmp_path, monkeypatch, path, key, expected):
    monkeypatch.setenv("HARNESS_AITER", "torch")  # the torch model's verdicts; emulated: tests/test_aiter_gfx950.py
    mode, specs = CPU_RUNS[key]
    run = protocol.evaluate(subs.from_path(path), CPU, mode, specs, cases_name="test", flush="fast",
                            timeout_s=300.0, budgets=QUICK, log_dir=tmp_path)
    assert run.standin == "aiter" and sum(platforms.AITER_STANDIN_MARK in w for w in run.warnings) == 1
    check_verdict(run, expected, f"{path.name} {key}")


def test_there_are_enough_samples_and_each_states_its_verdict():
    paths = sorted(SAMPLES.glob("*.py"))
    assert len(paths) >= 12
    assert all(expectations(path) for path in paths)
    stated = {key for path in paths for key in expectations(path)}
    assert {"test", "leaderboard", "stress", "same_batch_other_kv", "cpu", "gpu-leaderboard", "lint"} <= stated


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("path", sorted(p for p in SAMPLES.glob("*.py") if any(
    k.startswith("gpu-") for k in expectations(p))), ids=lambda p: p.stem)
def test_sample_verdict_on_the_gpu(tmp_path, path):
    here = platforms.detect("cuda")
    for key, expected in expectations(path).items():
        if key.startswith("gpu-"):
            mode = key.removeprefix("gpu-")
            run = protocol.evaluate(subs.from_path(path), here, mode, cases.official("test"), cases_name="official",
                                    flush="fast", timeout_s=600.0, budgets=QUICK, log_dir=tmp_path)
            check_verdict(run, expected, f"{path.name} {key}")


def test_lint_line_names_a_rule_the_linter_finds():
    from harness.checks import lint

    for path in sorted(SAMPLES.glob("*.py")):
        rule = expectations(path).get("lint")
        found = {f.rule for f in lint.lint_file(path) if f.rule.startswith("MLA_")}
        assert found == ({rule} if rule else set()), f"{path.name}: {found}"


def test_the_expect_lines_use_known_keys():
    known = set(CPU_RUNS) | {"gpu-test", "gpu-leaderboard", "lint"}
    for path in sorted(SAMPLES.glob("*.py")):
        assert set(expectations(path)) <= known, path.name
        for value in expectations(path).values():
            assert re.fullmatch(r"(pass|fail|error)(:[\w-]+)?|rejected|MLA_\w+", value), value
