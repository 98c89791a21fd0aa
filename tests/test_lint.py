"""harness lint: each rule fires on a real snippet, stays quiet on legitimate code, and the CLI's exit codes."""
import subprocess
import sys
from pathlib import Path

import pytest

from harness.checks.lint import MAX_BYTES, lint_file, lint_source
import json
from harness import exits
import helpers

REPO = Path(__file__).resolve().parent.parent
HEADER = "#!POPCORN leaderboard amd-mixed-mla\n#!POPCORN gpu MI355X\n"
WORD = "str" + "eam"  # spelled in two pieces so this test file itself stays clean for grep-based checks


def rules(source, blocking=None):
    found = lint_source(HEADER + source, "sub.py")
    return {f.rule for f in found if blocking is None or f.blocking == blocking}


def kernel(body="    q = data[0]\n    return q.new_zeros((q.shape[0], 16, 512))\n"):
    return "def custom_kernel(data):\n" + body


# -- the server's rejections -------------------------------------------------

def test_clean_submission_has_no_findings():
    assert lint_source(HEADER + "import torch\n" + kernel(), "sub.py") == []


@pytest.mark.parametrize("where", [f"# a {WORD.upper()} in a comment\n", f"x = 'down{WORD}'\n",
                                   f"s = torch.cuda.current_{WORD}()\n"])
def test_forbidden_word_anywhere_any_case(where):
    findings = lint_source(HEADER + where + kernel(), "sub.py")
    word = [f for f in findings if f.rule == "FORBIDDEN_WORD"]
    assert len(word) == 1 and word[0].blocking and word[0].line == 3


def test_size_empty_and_encoding():
    assert [f.rule for f in lint_source(b"", "e.py")] == ["EMPTY_FILE"]
    assert [f.rule for f in lint_source(b"  \n\n", "e.py")] == ["EMPTY_FILE"]
    big = (HEADER + kernel() + "#" + "x" * MAX_BYTES + "\n").encode()
    assert "FILE_TOO_LARGE" in {f.rule for f in lint_source(big, "big.py")}
    latin = (HEADER + "# caf\xe9\n" + kernel()).encode("latin-1")
    bad = [f for f in lint_source(latin, "l.py") if f.rule == "NOT_UTF8"]
    assert bad and bad[0].line == 3 and bad[0].blocking


def test_directives_must_open_the_file_and_name_this_leaderboard():
    late = "import torch\n#!POPCORN leaderboard amd-mixed-mla\n#!POPCORN gpu MI355X\n" + kernel()
    found = lint_source(late, "late.py")
    assert {f.rule for f in found if f.blocking} == {"DIRECTIVE_PLACEMENT"}
    assert [f.line for f in found if f.rule == "DIRECTIVE_PLACEMENT"] == [2, 3]
    other = lint_source("#!POPCORN leaderboard amd-fp8-mm\n#!POPCORN gpu MI355X\n" + kernel(), "o.py")
    assert [f.rule for f in other if f.blocking] == ["WRONG_LEADERBOARD"]
    repeated = lint_source(HEADER + "#!POPCORN gpu MI300\n" + kernel(), "r.py")
    assert "BAD_DIRECTIVE" in {f.rule for f in repeated if f.blocking}
    missing = lint_source(kernel(), "m.py")
    assert {f.rule for f in missing} == {"MISSING_DIRECTIVE"} and not any(f.blocking for f in missing)


def test_syntax_error_and_missing_entry_point():
    found = lint_source(HEADER + "def custom_kernel(data):\n    return (\n", "s.py")
    assert [f.rule for f in found if f.blocking] == ["SYNTAX_ERROR"]
    assert rules("def kernel(data):\n    return data[0]\n", blocking=True) == {"NO_CUSTOM_KERNEL"}
    assert rules("from other import custom_kernel\n") == set()


# -- KernelGuard hard rules ---------------------------------------------------

@pytest.mark.parametrize("source, rule", [
    ("import torch\ntorch.cuda.Event.elapsed_time = lambda a, b: 0.001\n", "TIMER_MONKEYPATCH"),
    ("import torch\ntorch.cuda.Event = object\n", "TIMER_MONKEYPATCH"),
    ("import torch\nsetattr(torch.cuda, 'synchronize', lambda: None)\n", "TIMER_MONKEYPATCH"),
    ("import time\ntime.perf_counter_ns = lambda: 0\n", "TIMER_MONKEYPATCH"),
    ("import reference\nreference.check_implementation = lambda d, o: (True, '')\n", "HARNESS_RUNTIME_PATCHING"),
    ("import importlib\nimportlib.import_module('reference').ref_kernel = None\n", "HARNESS_RUNTIME_PATCHING"),
    ("import sys\nsys.modules['reference'] = None\n", "MODULE_MUTATION"),
    ("def f(): pass\nf.__globals__['x'] = 1\n", "GLOBALS_MUTATION"),
    ("import sys\nsys._getframe(1).f_locals['data'] = None\n", "FRAME_WALK_MUTATION"),
    ("def f(): pass\ndef g(): pass\nf.__code__ = g.__code__\n", "CODE_REPLACEMENT"),
    ("import torch\ntorch.allclose = lambda *a, **k: True\n", "TORCH_VALIDATION_MONKEYPATCH"),
    ("import builtins\nbuiltins.print = lambda *a, **k: None\n", "FAKE_BENCHMARK_EMIT"),
    ("print('Ranked Benchmark:')\n", "FAKE_BENCHMARK_EMIT"),
    ("print = lambda *a, **k: None\n", "FAKE_BENCHMARK_EMIT"),
    ("print('benchmark.0.mean: 1000')\n", "FAKE_BENCHMARK_EMIT"),
    ("import base64\nexec(base64.b64decode('cHJpbnQoMSk='))\n", "OBFUSCATED_EXEC"),
    ("import zlib\npayload = zlib.decompress(b'x')\nexec(payload)\n", "OBFUSCATED_EXEC"),
    ('SRC = """\n#define GLUE(a, b) a##b\nauto f = GLUE(hip, LaunchKernel);\n"""\n', "TOKEN_PASTE_CUDA_API"),
    ('SRC = """\n#define J(a, b) a ## b\nJ(Str, eam_t) s;\n"""\n', "TOKEN_PASTE_CUDA_API"),
    ("SRC = 'auto f = cuda##Launch;'\n", "TOKEN_PASTE_CUDA_API"),
    ("import subprocess, sys\nsubprocess.run([sys.executable, '-m', 'pip', 'install', 'x'])\n", "RUNTIME_PACKAGE_INSTALL"),
    ("import os\nos.system('pip install triton==3.2')\n", "RUNTIME_PACKAGE_INSTALL"),
    ("import pip\n", "RUNTIME_PACKAGE_INSTALL"),
    ("import torch\nx = getattr(torch.cuda, 'Str' + 'eam')\n", "FORBIDDEN_WORD_EVASION"),
    ("import os\nmode = os.environ.get('POPCORN_SEED')\n", "EVALUATOR_MODE_BRANCH"),
    ("import sys\nranked = 'leaderboard' in sys.argv\n", "EVALUATOR_MODE_BRANCH"),
    ("import gc\nobjs = gc.get_objects()\n", "GC_INTROSPECTION"),
    ("import harness\n", "IMPORTS_HARNESS"),
])
def test_hard_rules_block(source, rule):
    assert rule in rules(source + kernel(), blocking=True)


@pytest.mark.parametrize("source, rule", [
    ("import torch\ng = torch.cuda.CUDAGraph()\n", "CUDA_GRAPH"),
    ("import torch\nf = torch.compile(lambda x: x)\n", "TORCH_COMPILE"),
    ("code = eval('1 + 1')\n", "PLAIN_EXEC"),
    ("import reference\n", "IMPORT_REFERENCE"),
    ("from reference import SM_SCALE\n", "IMPORT_REFERENCE"),
    ("import threading\n", "THREADS"),
    ("import torch\ne = torch.cuda.Event(enable_timing=False)\n", "DISABLE_TIMING_EVENT"),
])
def test_flag_only_rules_warn(source, rule):
    found = lint_source(HEADER + source + kernel(), "sub.py")
    assert rule in {f.rule for f in found}
    assert not any(f.blocking for f in found), [f for f in found if f.blocking]


# -- output replay: cached outputs block, cached workspaces do not ----------------

REPLAYS = {
    "SHAPE_OUTPUT_REPLAY": """
_RESULTS = {}
def custom_kernel(data):
    q = data[0]
    key = tuple(q.shape)
    if key in _RESULTS:
        return _RESULTS[key]
    out = q[..., :512] * 2
    _RESULTS[key] = out
    return out
""",
    "POINTER_REPLAY": """
_SEEN = {}
def custom_kernel(data):
    q = data[0]
    out = _SEEN.get(q.data_ptr())
    if out is not None:
        return out
    out = q.new_empty(3)
    compute(q, out)
    _SEEN[q.data_ptr()] = out
    return out
""",
    "LAST_CALL_REPLAY": """
_last = None
def custom_kernel(data):
    global _last
    if _last is not None:
        return _last
    _last = compute(data)
    return _last
""",
    "RESULT_BANK_REPLAY": """
import functools
@functools.lru_cache(maxsize=None)
def _attend(q):
    return q * 2
def custom_kernel(data):
    return _attend(data[0])
""",
}


@pytest.mark.parametrize("rule", sorted(REPLAYS))
def test_output_replay_blocks(rule):
    found = [f for f in lint_source(HEADER + REPLAYS[rule], "sub.py") if f.blocking]
    assert [f.rule for f in found] == [rule]
    assert "earlier call" in found[0].message


def test_replay_through_a_helper_and_a_mutable_default():
    helper = """
_BANK = {}
def _run(q):
    if id(q) in _BANK:
        return _BANK[id(q)].clone()
    return q
def custom_kernel(data):
    return _run(data[0])
"""
    assert rules(helper, blocking=True) == {"POINTER_REPLAY"}
    default = "def custom_kernel(data, _memo={}):\n    return _memo.setdefault(0, data[0])\n"
    assert rules(default, blocking=True) == {"OUTPUT_REPLAY_CACHE"}


def test_workspace_and_metadata_caches_are_legitimate():
    workspace = """
_BUFFERS = {}
_META = {}
def _buffers(shape, device):
    key = (shape, device)
    if key not in _BUFFERS:
        _BUFFERS[key] = (torch.empty(shape), torch.empty(shape))
    return _BUFFERS[key]
def _metadata(batch):
    if batch not in _META:
        _META[batch] = build(batch)
    return _META[batch]
def custom_kernel(data):
    q = data[0]
    partial, out = _buffers(tuple(q.shape), q.device)
    meta = _metadata(q.shape[0])
    kernel(q, partial, out, **meta)
    return out
"""
    assert rules(workspace, blocking=True) == set()
    # An output buffer kept across calls is fine when the kernel rewrites it on every call.
    reused = """
_OUT = {}
def custom_kernel(data):
    q = data[0]
    out = _OUT.get(q.shape)
    if out is None:
        out = _OUT.setdefault(q.shape, q.new_empty(q.shape))
    launch(q, out)
    return out
"""
    assert rules(reused, blocking=True) == set()
    static = """
_OUT = torch.empty((256, 16, 512))
def custom_kernel(data):
    q = data[0]
    launch(q, _OUT)
    return _OUT[: q.shape[0]]
"""
    assert rules(static, blocking=True) == set()


def test_repository_submissions_lint_clean():
    files = sorted((REPO / "submissions").glob("[0-9]*_*.py"))
    assert files, "no submissions to check"
    for path in files:
        blocking = [f.format(path.name) for f in lint_file(path) if f.blocking]
        assert blocking == [], blocking


# -- the command ---------------------------------------------------------------

def harness(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_cli_exit_codes_and_format(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(HEADER + f"# {WORD}\nimport threading\n" + kernel())
    good = tmp_path / "good.py"
    good.write_text(HEADER + kernel())
    result = harness("lint", str(bad), str(good))
    assert result.returncode == 1
    assert f"{bad}:3: FORBIDDEN_WORD error: " in result.stdout
    assert f"{bad}:4: THREADS warning: " in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    assert harness("lint", str(good)).returncode == 0
    missing = harness("lint", str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and "no such submission file" in missing.stderr
    assert "Traceback" not in missing.stderr
    assert harness("lint", "99999").returncode == 2


def test_token_paste_of_ordinary_names_is_fine():
    source = 'SRC = """\n#define CAT(a, b) a##b\nint CAT(tile, _m) = 0;\n"""\n'
    assert "TOKEN_PASTE_CUDA_API" not in rules(source + kernel())


def test_hostile_bytes_never_crash_lint():
    import random

    rng = random.Random(6)
    samples = [b"\x00\x01def custom_kernel(data):\n    return 1\n", ("x = " + "(" * 500 + "1" + ")" * 500 + "\n").encode(),
               ("s = " + " + ".join(["'a'"] * 3000) + "\n").encode(), b"\xff\xfe\x00",
               bytes(rng.randrange(256) for _ in range(4000))]
    for path in list((REPO / "harness").glob("*.py")) + list((REPO / "tests").glob("*.py")):
        samples.append(path.read_bytes())
    for sample in samples:
        for finding in lint_source(sample, "hostile.py"):
            assert finding.rule and finding.line >= 1 and finding.message


def test_input_passthrough_blocks_only_in_custom_kernel():
    assert rules(kernel("    return data[0]\n"), blocking=True) == {"INPUT_PASSTHROUGH_OUTPUT"}
    unpacked = kernel("    q, kv_data, qo, kv, config = data\n    out = q.view(q.shape[0], 16, 576)\n    return out\n")
    assert rules(unpacked, blocking=True) == {"INPUT_PASSTHROUGH_OUTPUT"}
    computed = kernel("    q = data[0]\n    out = q[..., :512] * 2\n    return out\n")
    assert rules(computed, blocking=True) == set()
    helper = "def _finish(out):\n    return out\n" + kernel("    return _finish(data[0] * 2)\n")
    assert rules(helper, blocking=True) == set()


CORPUS_LINT = {  # the blocking rules each corpus file must get; every other file has none
    "caches_output.py": {"SHAPE_OUTPUT_REPLAY"},
    "forbidden_word.py": {"FORBIDDEN_WORD"},
    "forges_reply.py": {"EVALUATOR_MODE_BRANCH"},
    "no_custom_kernel.py": {"NO_CUSTOM_KERNEL"},
    "patches_clock_in_call.py": {"TIMER_MONKEYPATCH"},
    "patches_reference.py": {"HARNESS_RUNTIME_PATCHING"},
    "patches_timer.py": {"TIMER_MONKEYPATCH"},
    "returns_input.py": {"INPUT_PASSTHROUGH_OUTPUT"},
    "syntax_error.py": {"SYNTAX_ERROR"},
}


def test_corpus_lint_verdicts():
    files = sorted((REPO / "tests" / "samples" / "bad").glob("*.py"))
    assert len(files) > 20
    for path in files:
        blocking = {f.rule for f in lint_file(path) if f.blocking}
        assert blocking == CORPUS_LINT.get(path.name, set()), path.name


@pytest.mark.slow  # 25-27 s on the loaded 2-core machine (2026-12-04)
def test_lint_takes_all_as_run_does():
    everything = helpers.invoke("lint", "--json")
    with_all = helpers.invoke("lint", "--all", "--json")
    assert with_all.exit_code == everything.exit_code, with_all.output
    assert json.loads(with_all.output) == json.loads(everything.output)
    assert len(json.loads(with_all.output)) == len(list((helpers.REPO / "submissions").glob("[0-9]*_*.py")))
    both = helpers.invoke("lint", "120", "--all")
    assert both.exit_code == exits.EXIT_USAGE and "not both" in both.output
