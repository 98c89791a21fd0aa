"""Issue 18's everyday defects, each checked through the real command the way the new user met it."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import cli, exits, paths
from harness.results import ledger
from harness.results import records

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "tests" / "samples"
HARNESS = [sys.executable, "-c", "from harness.cli import main; main()"]


def invoke(*args, env=None):
    return CliRunner(env=env).invoke(cli.main, [str(a) for a in args])


def harness(*args, env=None, cwd=REPO):
    """The real command in a child process with pipes, as a script or CI sees it."""
    return subprocess.run(HARNESS + [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


# -- 1. a Python syntax error is a compile failure at the file's line, exit 1 ----------------------------

@pytest.mark.parametrize("body", [
    "import triton\n\ndef broken(:\n    pass\n",
    "from torch.utils.cpp_extension import load_inline\nSOURCE = '__global__ void k() {}'\n\ndef broken(:\n    pass\n",
])
def test_compile_of_a_file_with_a_python_syntax_error_fails_at_its_line(tmp_path, body):
    path = tmp_path / "broken.py"
    path.write_text(body)
    line = body.splitlines().index("def broken(:") + 1
    result = invoke("compile", path)
    assert result.exit_code == exits.EXIT_FAILED, result.output
    assert f"broken.py:{line}:" in result.output and "SyntaxError" in result.output
    assert "internal error" not in result.output
    [record] = ledger.read()
    assert record["mode"] == "compile" and record["status"] == "fail" and f"line {line}" in record["reason"]


# -- 2. a missing ledger is an error however it was named; no scoreboard is replaced by an empty one ------

def _board_page(tmp_path) -> Path:
    page = tmp_path / "board.md"
    page.write_text("# Scoreboard\n\n## NVIDIA H200 · benchmark · official cases\n| a table the user keeps |\n")
    return page


@pytest.mark.parametrize("how", ["HARNESS_LEDGER", "HARNESS_RESULTS", "--ledger"])
def test_scoreboard_refuses_a_ledger_that_is_not_there(tmp_path, monkeypatch, how):
    page = _board_page(tmp_path)
    before = page.read_text()
    args = ["scoreboard", "--output", page, "--chart", tmp_path / "chart.png"]
    if how == "HARNESS_LEDGER":
        monkeypatch.setenv(paths.LEDGER_ENV, str(tmp_path / "typo.jsonl"))
    elif how == "HARNESS_RESULTS":
        (tmp_path / "empty").mkdir()
        monkeypatch.setenv(paths.RESULTS_ENV, str(tmp_path / "empty"))
    else:
        args += ["--ledger", tmp_path / "typo.jsonl"]
    result = invoke(*args)
    assert result.exit_code == exits.EXIT_USAGE, result.output
    assert result.output.startswith("error: no ledger at") and len(result.output.strip().splitlines()) == 1
    assert how.lstrip("-") in result.output  # says where the name came from
    assert page.read_text() == before


def test_scoreboard_with_no_tables_replaces_a_page_only_when_asked(tmp_path):
    page = _board_page(tmp_path)
    before = page.read_text()
    paths.ledger_file().parent.mkdir(parents=True, exist_ok=True)
    paths.ledger_file().write_text("")  # a ledger with nothing in it
    refused = invoke("scoreboard", "--output", page, "--chart", tmp_path / "chart.png")
    assert refused.exit_code == exits.EXIT_USAGE and "--allow-empty" in refused.output, refused.output
    assert page.read_text() == before
    asked = invoke("scoreboard", "--output", page, "--chart", tmp_path / "chart.png", "--allow-empty")
    assert asked.exit_code == 0, asked.output
    assert "No results yet" in page.read_text()


# -- 4 and 9. diff names the real cause, pipes plain text, and words a missing number as `run` does -------

CPU = records.Device(name="cpu (x86_64)", arch="cpu", backend="cpu")
H200 = records.Device(name="NVIDIA H200", arch="sm_90", backend="cuda")


def timed_record(number: int, name: str, *, device=CPU, interpreter=False, means=None):
    means = means or {(1, 64): 900000.0, (2, 4500): 950000.0}
    results = [{"spec": {"batchsize": b, "qseqlen": 1, "kvseqlen": kv, "seed": 1}, "status": "pass", "message": "",
                "stats": {"runs": 3, "mean": mean, "std": 1.0, "err": 1.0, "best": mean, "worst": mean}, "notes": {}}
               for (b, kv), mean in means.items()]
    return records.new_record(
        source="local", submission=records.SubmissionInfo(number=number, path=f"submissions/{name}", sha256=name,
                                                          requirements=["torch"], optional=[], numbered=True),
        mode="benchmark", cases="small", flush="none", device=device, versions={}, status="pass", reason="",
        results=results, warnings=[], started="2026-12-01T10:00:00", finished="2026-12-01T10:00:00",
        interpreter=interpreter)


def test_diff_names_the_interpreter_when_one_side_ran_there_only_through_it():
    ledger.append(timed_record(1, "001_torch_reference.py"))
    ledger.append(timed_record(201, "201_triton_fp8kv.py", interpreter=True))
    result = invoke("diff", "001", "201", "--device", "cpu")
    assert result.exit_code == exits.EXIT_USAGE
    assert "run both there first" not in result.output, result.output
    assert "'201'" in result.output and "interpreter" in result.output and "--include-interpreter" in result.output
    shown = invoke("diff", "001", "201", "--device", "cpu", "--include-interpreter")
    assert shown.exit_code == 0, shown.output


def test_diff_source_piped_has_no_padding():
    ledger.append(timed_record(119, "119_bmm_triton_hybrid.py", device=H200))
    ledger.append(timed_record(200, "200_triton_mxfp4.py", device=H200))
    done = harness("diff", "119", "200", "--source", env={paths.LEDGER_ENV: str(paths.ledger_file())})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("+++ submissions/200_triton_mxfp4.py") for line in lines)
    padded = [line for line in lines if line != line.rstrip() and line.strip()]  # " " alone: an empty context line
    assert not padded, "lines padded with spaces"


def test_diff_of_an_unknown_number_says_what_run_says():
    ledger.append(timed_record(200, "200_triton_mxfp4.py", device=H200))
    diffed, ran = invoke("diff", "999", "200"), invoke("run", "999")
    assert diffed.exit_code == ran.exit_code == exits.EXIT_USAGE
    assert "no submission numbered 999" in diffed.output and "no submission numbered 999" in ran.output


# -- 6. the same flags mean the same thing in every command ---------------------------------------------

def test_lint_takes_all_as_run_does():
    everything = invoke("lint", "--json")
    with_all = invoke("lint", "--all", "--json")
    assert with_all.exit_code == everything.exit_code, with_all.output
    assert json.loads(with_all.output) == json.loads(everything.output)
    assert len(json.loads(with_all.output)) == len(list((REPO / "submissions").glob("[0-9]*_*.py")))
    both = invoke("lint", "120", "--all")
    assert both.exit_code == exits.EXIT_USAGE and "not both" in both.output


def test_every_command_that_takes_submissions_takes_all():
    import click

    for name, command in cli.main.commands.items():
        takes_many = any(isinstance(p, click.Argument) and p.nargs == -1 and p.name == "submissions"
                         for p in command.params)
        if takes_many:
            assert "run_all" in {p.name for p in command.params}, f"harness {name} takes submissions but not --all"


def test_diff_device_takes_the_words_run_takes():
    ledger.append(timed_record(119, "119_bmm_triton_hybrid.py", device=H200, means={(4, 1024): 30000.0}))
    ledger.append(timed_record(200, "200_triton_mxfp4.py", device=H200, means={(4, 1024): 10000.0}))
    ledger.append(timed_record(119, "119_bmm_triton_hybrid.py"))
    ledger.append(timed_record(200, "200_triton_mxfp4.py"))
    on_gpu = invoke("diff", "119", "200", "--device", "cuda")  # run's "cuda": any GPU
    assert on_gpu.exit_code == 0, on_gpu.output
    assert "compared on NVIDIA H200" in " ".join(on_gpu.output.split())
    on_cpu = invoke("diff", "119", "200", "--device", "cpu", "--json")
    assert on_cpu.exit_code == 0 and json.loads(on_cpu.output)["device"] == "cpu (x86_64)"
    assert invoke("diff", "119", "200", "--device", "auto").exit_code == 0


# -- 7. a full disk says the disk is full ------------------------------------------------------------------

@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_full_disk_is_named_as_such(tmp_path):
    cases = tmp_path / "one.txt"
    cases.write_text("batchsize: 1; qseqlen: 1; kvseqlen: 64; seed: 11\n")
    done = harness("run", SAMPLES / "reference_call.py", "--device", "cpu", "--cases", cases,
                   env={paths.LEDGER_ENV: "/dev/full"})
    assert done.returncode == exits.EXIT_USAGE, done.stdout + done.stderr
    assert "permissions" not in done.stderr
    assert "no space left on the device" in done.stderr and "/dev/full" in done.stderr, done.stderr


def test_the_ledger_names_why_a_write_failed():
    import errno

    assert "no space left" in ledger.why_unwritten(OSError(errno.ENOSPC, "No space left on device"))
    assert "permission" in ledger.why_unwritten(PermissionError(errno.EACCES, "Permission denied"))
    assert "read-only" in ledger.why_unwritten(OSError(errno.EROFS, "Read-only file system"))
    assert "Is a directory" in ledger.why_unwritten(IsADirectoryError(errno.EISDIR, "Is a directory"))


# -- 8. docs say what the gate does and cite only files in the repository ----------------------------------

def _docs() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split()
    return [REPO / name for name in listed]


def test_every_document_and_python_path_the_docs_cite_is_in_the_repository():
    import re

    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.split()
    names = {Path(name).name for name in tracked}
    missing = []
    for doc in _docs():
        text = doc.read_text(encoding="utf-8")
        for cited in set(re.findall(r"\b([\w-]+\.md)\b", text)):
            if cited not in names:
                missing.append(f"{doc.relative_to(REPO)} cites {cited}")
        for cited in set(re.findall(r"`((?:[\w.-]+/)+[\w.-]+\.py)`", text)):
            if "NNN" not in cited and not (REPO / cited).is_file() and not (REPO / "harness" / cited).is_file():
                missing.append(f"{doc.relative_to(REPO)} cites {cited}")
    assert not missing, missing


def test_remote_doc_says_the_gate_compiles_hip_only_files():
    from harness import submission as subs
    from harness.remote import gate

    text = (REPO / "docs" / "REMOTE.md").read_text(encoding="utf-8")
    assert "HIP-only file gets the static checks only" not in " ".join(text.split())
    sub = subs.resolve("120")
    verdict = gate.run_gate(sub, sub.path.read_text(), "amd-mixed-mla")
    compiled = [check for check in verdict.checks if check.name == "gfx950 compile"]
    assert compiled and compiled[0].ok, [vars(c) for c in verdict.checks]
    assert "HIP" in compiled[0].details[0]
    step = text[text.index("## The local gate"):text.index("If the gate fails")]
    assert "HIP" in step and "compile" in step and "refuse" in step


# -- 3. at 80 columns in a terminal, status and numbers are never cut; long text wraps or moves below ------

TERMINAL_80 = {"FORCE_COLOR": "1", "NO_COLOR": "1", "COLUMNS": "80", "TERM": "xterm"}


def plain(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def test_list_at_80_columns_keeps_every_reason():
    from harness import platform as platforms
    from harness import submission as subs

    shown = invoke("list", "--device", "cpu", env=TERMINAL_80)
    assert shown.exit_code == 0, shown.output
    text = plain(shown.output)
    assert max(len(line) for line in text.splitlines()) <= 80
    here = platforms.detect("cpu")
    for sub in subs.discover():
        _, reason = platforms.can_run(sub, here)
        assert str(sub.number) in text and all(word in text for word in reason.split()), (reason, text)


def _fake_run(mode: str):
    from harness import platform as platforms
    from harness import submission as subs
    from harness.run import protocol, timing

    results = []
    for index, (batch, kv) in enumerate([(4, 1024), (32, 1024), (64, 8192), (256, 8192)]):
        stats = timing.Stats(runs=1000 - index, mean=143831.2 + index, std=5.0, err=12345.6, best=1768.4,
                             worst=96042.9)
        results.append(protocol.CaseResult(spec={"batchsize": batch, "qseqlen": 1, "kvseqlen": kv, "seed": 9826},
                                           status="timeout" if index == 3 else "pass", stats=stats,
                                           message="a long note about which path the kernel took on this shape",
                                           accuracy={"relative_error": 0.0138, "noise_multiple": 0.3}))
    return protocol.RunResult(submission=subs.resolve("119"), mode=mode, cases="official", flush="fast",
                              platform=platforms.detect("cpu"), status="pass", reason="", results=results,
                              warnings=[], started="", finished="")


@pytest.mark.parametrize("mode", ["benchmark", "test"])
def test_the_run_table_at_80_columns_keeps_status_numbers_and_the_case_number(mode):
    from rich.console import Console

    from harness import display

    out = Console(width=80, record=True, force_terminal=True, no_color=True)
    display.print_run(out, _fake_run(mode))
    text = out.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    header = next(line for line in text.splitlines() if "status" in line)
    assert "#" in header
    rows = [line for line in text.splitlines() if "pass" in line or "timeout" in line]
    assert len([line for line in rows if " pass " in line]) == 3 and any(" timeout " in line for line in rows)
    from harness.results.figures import format_us

    timed = [f"{format_us(143831.2)} ± {format_us(12345.6)}", format_us(1768.4), format_us(96042.9), "1000", "997"]
    for figure in ["0.0138 (0.3×)"] + (timed if mode == "benchmark" else []):
        assert figure in text, (figure, text)
    assert "…" not in text


def test_compile_tables_at_80_columns_are_not_slivers(tmp_path):
    import textwrap

    path = tmp_path / "900_probe.py"
    path.write_text(textwrap.dedent('''
        import triton
        import triton.language as tl

        @triton.jit
        def scale_rows_by_factor_kernel(x_ptr, y_ptr, n, factor, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * factor, mask=offs < n)

        AOT_SPECS = [{"kernel": "scale_rows_by_factor_kernel", "label": "fp32 rows, 256-wide blocks",
                      "signature": {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "n": "i32", "factor": "fp32"},
                      "constexprs": {"BLOCK": 256}, "num_warps": 4}]
    '''))
    shown = invoke("compile", path, "--target", "gfx950", env=TERMINAL_80)
    assert shown.exit_code == 0, shown.output
    text = plain(shown.output)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "waves/SIMD" in text and "fp32 rows, 256-wide blocks" in " ".join(text.replace("│", " ").split())
    hip = invoke("compile", "120", env=TERMINAL_80)
    assert hip.exit_code == 0, hip.output
    text = plain(hip.output)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "v_mfma_f32_16x16x128_f8f6f4" in text and "waves/SIMD" in text and "…" not in text
