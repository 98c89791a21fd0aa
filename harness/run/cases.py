"""Which shapes a run uses: the official task.yml lists, a small CPU set, or a user's file.

A cases file is either a YAML list of specs ({batchsize, qseqlen, kvseqlen, seed}) or lines in the
official eval.py format: `batchsize: 4; qseqlen: 1; kvseqlen: 1024; seed: 4220`.
"""
import re
from pathlib import Path

import yaml

from harness.paths import TASK_YML


REQUIRED_KEYS = ("batchsize", "qseqlen", "kvseqlen", "seed")
# generate_input's keyword options a spec may also carry (uneven segments).
OPTIONAL_KEYS = ("kv_seq_lens", "stress")
# reference.STRESS_KINDS (tests/test_stress.py checks they agree): structured data beside the official randn.
STRESS_KINDS = ("peaked", "heavy", "qscale")
STRESS_SEED_OFFSET = 7919  # stress cases draw other seeds than the shapes' official ones
MODES = ("test", "benchmark", "leaderboard", "profile")

# CPU-friendly cases; the last crosses submission 119's bmm/Triton threshold (kv * qseq > 4096).
SMALL = [
    {"batchsize": 1, "qseqlen": 1, "kvseqlen": 64, "seed": 11},
    {"batchsize": 3, "qseqlen": 1, "kvseqlen": 257, "seed": 12},
    {"batchsize": 2, "qseqlen": 1, "kvseqlen": 4500, "seed": 13},
]

# The official eval.py's pattern for one `key: value` part of a line.
_EVAL_PART = re.compile(r"\s*([a-zA-Z_]\w*):\s*([a-zA-Z_]\w*|[+-]?[0-9]+)\s*")


class CaseError(ValueError):
    """Cases that cannot be used (message is one line for the user)."""


def task_definition(path: Path = TASK_YML) -> dict:
    try:
        task = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise CaseError(f"cannot read {path}: {exc}") from None
    if not isinstance(task, dict):
        raise CaseError(f"{path} is not a task definition")
    return task


def official(mode: str) -> list[dict]:
    """task.yml's `tests` for test mode, its `benchmarks` for every other mode."""
    if mode not in MODES:
        raise CaseError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    key = "tests" if mode == "test" else "benchmarks"
    return [validate(spec, f"task.yml {key}[{i}]") for i, spec in enumerate(task_definition()[key])]


def case_timeout_s(mode: str) -> float:
    """The per-case time limit derived from task.yml: test_timeout, benchmark_timeout or ranked_timeout."""
    key = {"test": "test_timeout", "leaderboard": "ranked_timeout"}.get(mode, "benchmark_timeout")
    return float(task_definition().get(key, 900))


def stress(base: list[dict]) -> list[dict]:
    """Every base shape once per stress kind (harness run --cases stress; the default test mode's warnings)."""
    return [{**spec, "seed": spec["seed"] + STRESS_SEED_OFFSET, "stress": kind} for kind in STRESS_KINDS
            for spec in base]


def load(name_or_file: str, mode: str, gpu: bool = True) -> list[dict]:
    """"official", "small", "stress" (on the test shapes, or the small ones without a GPU), or a cases file."""
    if name_or_file == "official":
        return official(mode)
    if name_or_file == "small":
        return [dict(spec) for spec in SMALL]
    if name_or_file == "stress":
        return stress(official("test") if gpu else SMALL)
    path = Path(name_or_file)
    if not path.is_file():
        raise CaseError(f"--cases must be official, small or a cases file; no such file: {name_or_file}")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"cannot read {path}: {exc}") from None
    specs = parse_eval_lines(text, path) if _looks_like_eval_lines(text) else _parse_yaml(text, path)
    if not specs:
        raise CaseError(f"{path} holds no cases")
    return [validate(spec, f"{path} case {i + 1}") for i, spec in enumerate(specs)]


def _meaningful_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _looks_like_eval_lines(text: str) -> bool:
    lines = _meaningful_lines(text)
    return bool(lines) and all(";" in line and not line.lstrip().startswith(("-", "[", "{")) for line in lines)


def parse_eval_lines(text: str, where: object = "cases") -> list[dict]:
    """Lines like eval.py reads them: `key: value; ...`, integer values, true/false, bare words."""
    specs = []
    for line in _meaningful_lines(text):
        spec = {}
        for part in line.split(";"):
            match = _EVAL_PART.fullmatch(part)
            if not match:
                raise CaseError(f"{where}: invalid case line {line.strip()!r} (part {part.strip()!r})")
            key, value = match[1], match[2]
            try:
                spec[key] = int(value)
            except ValueError:
                spec[key] = {"true": True, "false": False}.get(value, value)
        specs.append(spec)
    return specs


def _parse_yaml(text: str, where: Path) -> list[dict]:
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = str(exc).splitlines()[0]
        raise CaseError(f"{where}: not YAML nor eval.py-style case lines ({problem})") from None
    if loaded is None:  # only comments or blank lines
        return []
    if isinstance(loaded, dict) and isinstance(loaded.get("benchmarks") or loaded.get("tests"), list):
        raise CaseError(f"{where}: looks like a task.yml; give a plain list of cases")
    if not isinstance(loaded, list):
        raise CaseError(f"{where}: expected a YAML list of cases")
    return loaded


def validate(spec: object, where: str = "case") -> dict:
    """A clean copy of one spec, or a CaseError saying what is wrong with it."""
    if not isinstance(spec, dict):
        raise CaseError(f"{where}: a case must be a mapping, got {spec!r}")
    unknown = sorted(set(spec) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS))
    if unknown:
        raise CaseError(f"{where}: unknown key(s) {', '.join(map(str, unknown))}")
    missing = [key for key in REQUIRED_KEYS if key not in spec]
    if missing:
        raise CaseError(f"{where}: missing {', '.join(missing)}")
    for key in REQUIRED_KEYS:
        value = spec[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise CaseError(f"{where}: {key} must be an integer, got {value!r}")
        if key != "seed" and value < 1:
            raise CaseError(f"{where}: {key} must be positive, got {value}")
    lens = spec.get("kv_seq_lens")
    if lens is not None:
        if not isinstance(lens, list) or len(lens) != spec["batchsize"] or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in lens
        ):
            raise CaseError(f"{where}: kv_seq_lens must list {spec['batchsize']} positive integers")
    if "stress" in spec and spec["stress"] not in STRESS_KINDS:
        raise CaseError(f"{where}: stress must be one of {', '.join(STRESS_KINDS)}, got {spec['stress']!r}")
    ordered = {key: spec[key] for key in REQUIRED_KEYS}
    ordered.update({key: spec[key] for key in OPTIONAL_KEYS if key in spec})
    return ordered


def spec_line(case: dict) -> str:
    """'batchsize: 4; qseqlen: 1; kvseqlen: 1024; seed: 4220' (the official test-line format)."""
    def text(value):
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return ",".join(str(v) for v in value)
        return str(value)
    return "; ".join(f"{key}: {text(value)}" for key, value in case.items())
