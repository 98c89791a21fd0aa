"""A run on the gfx950 emulator takes minutes a case: unless --timeout says otherwise, its limit is longer."""
from pathlib import Path

from harness import platform as platforms
from harness import submission as subs
from harness.run import cases, session

SAMPLES = Path(__file__).resolve().parent / "samples"


def settle(timeout_s, *submissions):
    return session.settle(device="auto", mode="test", cases_arg="official", flush="fast", timeout_s=timeout_s,
                          submissions=submissions)


def test_an_emulated_run_gets_a_longer_limit_unless_timeout_is_given(monkeypatch):
    monkeypatch.setattr(platforms, "_gpu_device_files", lambda: False)  # this machine as one without a GPU
    hip = subs.resolve(str(SAMPLES / "hip_inline.py"))
    plain = subs.resolve(str(SAMPLES / "reference_call.py"))
    task_limit = cases.case_timeout_s("test")
    settings = settle(None, hip, plain)
    assert settings.limit_for(hip) == session.EMULATED_LIMIT_FACTOR * task_limit > task_limit
    assert settings.limit_for(plain) == task_limit
    assert any(f"may take {session.EMULATED_LIMIT_FACTOR * task_limit:g} s" in line for line in settings.notices)
    given = settle(120.0, hip, plain)
    assert given.limit_for(hip) == given.limit_for(plain) == 120.0
    assert not any("may take" in line for line in given.notices)
    assert settle(None, plain).limit_for(plain) == task_limit


def test_an_aiter_file_whose_kernels_are_emulated_gets_the_longer_limit(monkeypatch):
    monkeypatch.setattr(platforms, "_gpu_device_files", lambda: False)
    monkeypatch.delenv("HARNESS_AITER", raising=False)
    aiter_file = subs.resolve(str(SAMPLES / "aiter_decode.py"))
    task_limit = cases.case_timeout_s("test")
    emulated = settle(None, aiter_file)
    assert platforms.emulates_aiter(aiter_file, emulated.platform)
    assert emulated.limit_for(aiter_file) == session.EMULATED_LIMIT_FACTOR * task_limit
    monkeypatch.setenv("HARNESS_AITER", "torch")  # the torch model: seconds, the task's own limit
    assert settle(None, aiter_file).limit_for(aiter_file) == task_limit
