"""submission.py and platform.py: finding files, reading what they need, and why a machine cannot run one."""
import dataclasses
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.results import ledger
from harness import platform as platforms
from harness import submission as subs

SAMPLES = Path(__file__).resolve().parent / "samples"
REPO = SAMPLES.parent.parent

H200 = platforms.Platform(backend="cuda", device_name="NVIDIA H200", arch="sm_90",
                          versions={"torch": "2.11", "triton": "3.6.0", "aiter": None})
MI355X = platforms.Platform(backend="rocm", device_name="AMD Instinct MI355X", arch="gfx950",
                            versions={"torch": "2.9", "triton": "3.5.0", "aiter": "0.1.9"})
MI300X_NO_AITER = platforms.Platform(backend="rocm", device_name="AMD Instinct MI300X", arch="gfx942",
                                     versions={"torch": "2.9", "triton": "3.5.0", "aiter": None})
CPU = platforms.Platform(backend="cpu", device_name="cpu (x86_64)", arch="cpu",
                         versions={"torch": "2.13", "triton": "3.9.0", "aiter": None})
CPU_NO_TRITON = platforms.Platform(backend="cpu", device_name="cpu (x86_64)", arch="cpu",
                                   versions={"torch": "2.13", "triton": None, "aiter": None})


@pytest.mark.parametrize("sample, needs, label", [
    ("reference_call.py", {"torch"}, "torch"),
    ("triton_interpreted.py", {"torch", "triton"}, "torch, triton"),
    ("hip_inline.py", {"torch", "hip"}, "hip, torch"),
    ("aiter_decode.py", {"torch", "aiter"}, "aiter, torch"),  # a hard import: skipped without aiter
    ("aiter_guarded_try.py", {"torch"}, "aiter (optional), torch"),
    ("aiter_guarded_find_spec.py", {"torch"}, "aiter (optional), torch"),
    ("aiter_guarded_rocm_branch.py", {"torch"}, "aiter (optional), torch"),
])
def test_requirements_of_sample_files(sample, needs, label):
    submission = subs.from_path(SAMPLES / sample)
    assert submission.requirements == frozenset(needs)
    assert submission.needs_label() == label


@pytest.mark.parametrize("text, needs", [
    ("import triton.language as tl\n", {"torch", "triton"}),
    ("    from triton import cdiv\n", {"torch", "triton"}),
    ("# we could use aiter or triton here one day\n", {"torch"}),
    # a missing module is not an OSError: this import is not guarded
    ("try:\n    import aiter\nexcept OSError:\n    aiter = None\n", {"torch", "aiter"}),
    ("from aiter import dtypes\n", {"torch", "aiter"}),
    ("import aiterator\n", {"torch"}),
    # CUDA source through load_inline is not HIP
    ("from torch.utils.cpp_extension import load_inline\nSRC = '#include <cuda_fp8.h>'\n", {"torch"}),
    ("from torch.utils.cpp_extension import load_inline\nSRC = '#include <hip/hip_runtime.h>'\n", {"torch", "hip"}),
    ("import os\nos.environ['PYTORCH_ROCM_ARCH'] = 'gfx942'\n", {"torch", "hip"}),
])
def test_requirements_of_text(text, needs):
    assert subs.requirements_of(text) == frozenset(needs)


GUARDED_AITER = [
    "try:\n    import aiter\nexcept ImportError:\n    aiter = None\n",
    "try:\n    from aiter.mla import mla_decode_fwd\nexcept ModuleNotFoundError:\n    pass\n",
    "try:\n    import aiter\nexcept (ValueError, ImportError):\n    pass\n",
    "try:\n    import aiter\nexcept Exception as error:\n    print(error)\n",
    "try:\n    import aiter\nexcept:\n    pass\n",
    "try:\n    import aiter\nexcept ImportError:\n    ok = False\nelse:\n    from aiter.mla import mla_decode_fwd\n",
    "import importlib.util\nif importlib.util.find_spec('aiter') is not None:\n    import aiter\n",
    "from importlib.util import find_spec\nHAS_AITER = find_spec('aiter') is not None\n"
    "def f():\n    if HAS_AITER:\n        from aiter import dtypes\n",
    "import torch\ndef f():\n    if torch.version.hip:\n        import aiter\n    else:\n        pass\n",
    "import torch\nif hasattr(torch.version, 'hip') and torch.version.hip is not None:\n    import aiter\n",
    "try:\n    import aiter\n    HAVE_AITER = True\nexcept ImportError:\n    HAVE_AITER = False\n"
    "def f():\n    if HAVE_AITER:\n        from aiter.mla import mla_decode_fwd\n",
]


@pytest.mark.parametrize("text", GUARDED_AITER)
def test_a_guarded_aiter_import_is_optional(text):
    assert subs.needs_of(text) == {subs.Requirement("torch"), subs.Requirement("aiter", optional=True)}
    assert subs.requirements_of(text) == {"torch"} and subs.optional_requirements_of(text) == {"aiter"}


@pytest.mark.parametrize("text", [
    "try:\n    import aiter\nexcept ImportError:\n    pass\nimport aiter.mla\n",  # one unguarded use is enough
    "try:\n    def f():\n        import aiter\nexcept ImportError:\n    pass\n",  # the try guards the def only
    "try:\n    x = 1\nexcept ImportError:\n    import aiter\n",  # the handler is the unguarded path
    "import torch\nif torch.cuda.is_available():\n    import aiter\n",  # not a test for aiter's platform
    # a flag from a try that guards no import is no guard
    "try:\n    out = int('x')\nexcept Exception:\n    out = None\nif out is None:\n    import aiter\n",
])
def test_an_unguarded_aiter_import_is_hard(text):
    assert subs.requirements_of(text) == {"torch", "aiter"}
    assert subs.optional_requirements_of(text) == frozenset()


HIP = "SRC = '#include <hip/hip_runtime.h>'\n"


def test_a_guarded_hip_build_is_optional_and_torch_load_is_no_build():
    guarded = HIP + ("from torch.utils.cpp_extension import load_inline\ndef build():\n    try:\n"
                     "        return load_inline(name='m', cpp_sources='', cuda_sources=SRC)\n"
                     "    except Exception:\n        return None\n")
    assert subs.needs_of(guarded) == {subs.Requirement("torch"), subs.Requirement("hip", optional=True)}
    assert subs.requirements_of(guarded + "import torch\nstate = torch.load('weights.pt')\n") == {"torch"}
    unguarded = HIP + "from torch.utils.cpp_extension import load_inline\nm = load_inline(name='m')\n"
    assert subs.requirements_of(unguarded) == {"torch", "hip"}
    rocm_only = HIP + ("import torch\nfrom torch.utils import cpp_extension\nif torch.version.hip:\n"
                       "    m = cpp_extension.load(name='m', sources=['k.hip'])\n")
    assert subs.optional_requirements_of(rocm_only) == {"hip"}


def test_submissions_013_has_an_optional_hip_build_and_a_hard_aiter_fallback():
    submission = subs.from_path(REPO / "submissions" / "013_hip_mxfp4_fused.py")
    assert submission.requirements == {"torch", "aiter"} and submission.optional == {"hip"}
    assert submission.needs_label() == "aiter, hip (optional), torch"
    assert platforms.can_run(submission, H200)[0]  # its fallback needs aiter: the stand-in serves it (issue 19)


def test_requirement_labels():
    assert subs.Requirement("aiter", optional=True).label == "aiter (optional)"
    assert subs.Requirement("triton").label == "triton"
    assert sorted([subs.Requirement("triton"), subs.Requirement("aiter", True)])[0].name == "aiter"


def test_an_unparsable_file_keeps_every_requirement_hard():
    assert subs.requirements_of("try:\n    import aiter\nexcept ImportError\n") == {"torch", "aiter"}


def test_hip_targets_are_read_from_the_source():
    assert subs.from_path(SAMPLES / "hip_inline.py").hip_archs == frozenset({"gfx950"})
    assert subs.hip_archs_of("x = 'gfx950'\n") == frozenset()  # no HIP source, no targets


def write(root: Path, name: str, text: str = "def custom_kernel(data):\n    return data\n") -> Path:
    path = root / name
    path.write_text(text)
    return path


def test_discover_orders_numbered_files_and_ignores_others(tmp_path):
    write(tmp_path, "120_hip_fp8.py")
    write(tmp_path, "007_first.py")
    write(tmp_path, "13_short.py")
    write(tmp_path, "helpers.py")
    write(tmp_path, "README.md")
    write(tmp_path, "014-dash.py")
    found = subs.discover(tmp_path)
    assert [(s.number, s.slug) for s in found] == [(7, "first"), (13, "short"), (120, "hip_fp8")]
    assert subs.discover(tmp_path / "missing") == []


def test_resolve_by_number_and_by_path(tmp_path):
    path = write(tmp_path, "007_first.py")
    assert subs.resolve("7", tmp_path).path == path
    assert subs.resolve("007", tmp_path).path == path
    loose = write(tmp_path, "my_idea.py")
    by_path = subs.resolve(str(loose), tmp_path)
    assert (by_path.number, by_path.slug, by_path.label) == (None, "my_idea", "my_idea")
    assert by_path.sha256 == hashlib.sha256(loose.read_bytes()).hexdigest()


@pytest.mark.parametrize("arg, message", [
    ("42", "no submission numbered 42"),
    ("5", "ambiguous"),
    ("nowhere.py", "no such submission file"),
    ("notes.txt", "not a Python file"),
])
def test_resolve_errors_are_one_clear_line(tmp_path, monkeypatch, arg, message):
    write(tmp_path, "005_a.py")
    write(tmp_path, "05_b.py")
    write(tmp_path, "notes.txt", "hello")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(subs.SubmissionError, match=message):
        subs.resolve(arg, tmp_path)


def test_skip_reason_names_what_is_missing_and_what_this_machine_is():
    hip = subs.from_path(SAMPLES / "hip_inline.py")
    ok, reason = platforms.can_run(hip, H200)
    assert not ok and reason.startswith(
        "needs ROCm: HIP source compiled with load_inline for gfx950; this machine is NVIDIA H200 (sm_90); ")
    ok, reason = platforms.can_run(hip, MI300X_NO_AITER)
    assert not ok and "gfx950" in reason and "AMD Instinct MI300X (gfx942)" in reason
    assert platforms.can_run(hip, MI355X) == (True, "")


def test_a_hip_skip_off_rocm_says_what_would_run_it(monkeypatch):
    """The emulator is the way off ROCm: the reason names its option, or the toolchain it lacks."""
    hip = subs.from_path(SAMPLES / "hip_inline.py")
    monkeypatch.setattr(platforms, "emulator_missing", lambda: None)
    assert platforms.can_run(hip, H200)[1].endswith(
        "; --device gfx950 runs it on the gfx950 emulator (correctness only)")
    lacking = "clang-22/lld-22/llvm-22 not found: run `make setup`"
    monkeypatch.setattr(platforms, "emulator_missing", lambda: lacking)
    reason = platforms.can_run(hip, H200)[1]
    assert reason.endswith(f"; the gfx950 emulator would run it, but its toolchain is missing: {lacking}")
    gfx942_only = dataclasses.replace(hip, hip_archs=frozenset({"gfx942"}))
    assert platforms.can_run(gfx942_only, H200)[1].endswith("the gfx950 emulator runs only gfx950 code")


def test_aiter_runs_everywhere_on_the_standin_where_aiter_is_missing():
    aiter = subs.from_path(SAMPLES / "aiter_decode.py")
    assert platforms.can_run(aiter, H200) == (True, platforms.AITER_STANDIN)
    assert platforms.can_run(aiter, MI300X_NO_AITER) == (True, platforms.AITER_STANDIN)
    assert platforms.can_run(aiter, MI355X) == (True, "")


@pytest.mark.parametrize("sample", ["aiter_guarded_try.py", "aiter_guarded_find_spec.py",
                                    "aiter_guarded_rocm_branch.py"])
def test_an_optional_aiter_never_stops_a_run_and_the_standin_is_said(sample):
    guarded = subs.from_path(SAMPLES / sample)
    fallback = platforms.OPTIONAL_AITER_STANDIN
    assert platforms.can_run(guarded, H200) == (True, fallback)
    assert platforms.can_run(guarded, MI300X_NO_AITER) == (True, fallback)
    assert platforms.can_run(guarded, CPU) == (True, fallback)
    assert platforms.can_run(guarded, MI355X) == (True, "")


def test_an_optional_triton_is_interpreted_on_a_cpu_when_installed():
    text = "try:\n    import triton\nexcept ImportError:\n    triton = None\n"
    probe = subs.Submission(number=None, slug="t", path=Path("t.py"), requirements=subs.requirements_of(text),
                            sha256="", optional=subs.optional_requirements_of(text))
    assert probe.optional == {"triton"}
    assert platforms.can_run(probe, CPU) == (
        True, "Triton kernels run through the interpreter (TRITON_INTERPRET=1; its fp8 rounding and bf16 dots mended)")
    assert platforms.can_run(probe, CPU_NO_TRITON) == (
        True, "triton (optional) is not available here: its fallback path runs")
    assert platforms.can_run(probe, H200) == (True, "")


@pytest.mark.slow
def test_a_guarded_aiter_file_runs_its_fallback_through_the_harness_and_its_error_is_reported(tmp_path):
    """harness run on the CPU: both run on the aiter stand-in (its aiter path raises in either), and say so."""
    ledger_path = tmp_path / "ledger.jsonl"
    env = {**os.environ, "HARNESS_LEDGER": str(ledger_path), "COLUMNS": "200", "PYTHONPATH": str(REPO)}
    guarded, hard = SAMPLES / "aiter_guarded_try.py", SAMPLES / "aiter_decode.py"
    command = [sys.executable, "-c", "from harness.cli import main; main()", "run", str(guarded), str(hard),
               "--device", "cpu", "--cases", "small", "--mode", "test"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert f"warning: {platforms.OPTIONAL_AITER_STANDIN}" in lines
    aiter_path_error = "NotImplementedError: the aiter path is not needed by the tests"
    assert any(line.startswith("error: case 1 ") and aiter_path_error in line for line in lines), done.stdout[-3000:]
    records = {Path(r["submission"]["path"]).name: r for r in ledger.read(ledger_path)}
    assert records["aiter_guarded_try.py"]["status"] == "error"
    assert [r["status"] for r in records["aiter_guarded_try.py"]["results"]] == ["error"] * 3
    assert records["aiter_decode.py"]["status"] == "error"
    assert records["aiter_decode.py"]["standin"] == records["aiter_guarded_try.py"]["standin"] == "aiter"


def test_list_shows_optional_requirements():
    from click.testing import CliRunner

    from harness.cli import main

    result = CliRunner(env={"COLUMNS": "250"}).invoke(main, ["list", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "013_hip_mxfp4_fused.py" in line)
    assert "aiter (stand-in here), hip (optional), torch" in row


def test_triton_runs_through_the_interpreter_on_a_cpu():
    triton_file = subs.from_path(SAMPLES / "triton_interpreted.py")
    ok, note = platforms.can_run(triton_file, CPU)
    assert ok and "TRITON_INTERPRET=1" in note
    assert platforms.can_run(triton_file, H200) == (True, "")
    ok, reason = platforms.can_run(triton_file, CPU_NO_TRITON)
    assert not ok and "Triton" in reason
    assert platforms.can_run(subs.from_path(SAMPLES / "reference_call.py"), CPU) == (True, "")


def test_detect_this_machine():
    cpu = platforms.detect("cpu")
    assert (cpu.backend, cpu.arch, cpu.is_gpu, cpu.torch_device) == ("cpu", "cpu", False, "cpu")
    assert cpu.versions["torch"] == torch.__version__
    assert set(cpu.versions) == {"torch", "triton", "aiter", "python", "harness"}
    if torch.cuda.is_available():
        assert platforms.detect("cuda").backend in ("cuda", "rocm")
    else:
        with pytest.raises(platforms.PlatformError, match="no usable GPU"):
            platforms.detect("cuda")
    with pytest.raises(platforms.PlatformError, match="unknown device"):
        platforms.detect("tpu")


def test_pypi_aiter_is_not_amd_aiter(tmp_path, monkeypatch):
    fake = tmp_path / "aiter"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert platforms.aiter_version() is None
    (fake / "mla.py").write_text("")
    assert platforms.aiter_version() is not None
