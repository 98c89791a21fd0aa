"""The emulator's tests check the numpy executors, the reference semantics; the C fast path is
checked against them by tests/emulator/test_native*.py, which alone run it."""
import pytest


@pytest.fixture(autouse=True)
def numpy_reference(request, monkeypatch):
    if not request.module.__name__.rpartition(".")[2].startswith("test_native"):
        monkeypatch.setenv("HARNESS_EMULATOR_NATIVE", "0")
