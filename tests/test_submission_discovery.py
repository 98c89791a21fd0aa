"""submission.py and platform.py: finding files, reading what they need, and why a machine cannot run one."""
import hashlib
from pathlib import Path

import pytest
import torch

from harness import platform as platforms
from harness import submission as subs

SAMPLES = Path(__file__).resolve().parent / "samples"

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


@pytest.mark.parametrize("sample, needs", [
    ("reference_call.py", {"torch"}),
    ("triton_interpreted.py", {"torch", "triton"}),
    ("hip_inline.py", {"torch", "hip"}),
    ("aiter_decode.py", {"torch", "aiter"}),
])
def test_requirements_of_sample_files(sample, needs):
    assert subs.from_path(SAMPLES / sample).requirements == frozenset(needs)


@pytest.mark.parametrize("text, needs", [
    ("import triton.language as tl\n", {"torch", "triton"}),
    ("    from triton import cdiv\n", {"torch", "triton"}),
    ("# we could use aiter or triton here one day\n", {"torch"}),
    ("try:\n    import aiter\nexcept ImportError:\n    aiter = None\n", {"torch", "aiter"}),
    ("from aiter import dtypes\n", {"torch", "aiter"}),
    ("import aiterator\n", {"torch"}),
    # CUDA source through load_inline is not HIP
    ("from torch.utils.cpp_extension import load_inline\nSRC = '#include <cuda_fp8.h>'\n", {"torch"}),
    ("from torch.utils.cpp_extension import load_inline\nSRC = '#include <hip/hip_runtime.h>'\n", {"torch", "hip"}),
    ("import os\nos.environ['PYTORCH_ROCM_ARCH'] = 'gfx942'\n", {"torch", "hip"}),
])
def test_requirements_of_text(text, needs):
    assert subs.requirements_of(text) == frozenset(needs)


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
    assert platforms.can_run(hip, H200) == (
        False, "needs ROCm: HIP source compiled with load_inline for gfx950; this machine is NVIDIA H200 (sm_90)")
    ok, reason = platforms.can_run(hip, MI300X_NO_AITER)
    assert not ok and "gfx950" in reason and "AMD Instinct MI300X (gfx942)" in reason
    assert platforms.can_run(hip, MI355X) == (True, "")


def test_aiter_runs_only_on_rocm_with_aiter_installed():
    aiter = subs.from_path(SAMPLES / "aiter_decode.py")
    assert platforms.can_run(aiter, H200) == (
        False, "needs AMD aiter, which runs only on ROCm; this machine is NVIDIA H200 (sm_90)")
    ok, reason = platforms.can_run(aiter, MI300X_NO_AITER)
    assert not ok and "not installed" in reason
    assert platforms.can_run(aiter, MI355X)[0]


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
