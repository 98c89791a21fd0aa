"""Every test runs with its own results folder: the ledger, worker logs, raw remote reports and the chart
land under the test's tmp_path, never in the tracked results/ (harness/paths.py reads $HARNESS_RESULTS).
Fixtures wider than one test (module and session scope) get a session folder, set before any of them runs.
The HIP toolchain cache is pinned too, so tests that move $HOME still find it. Every child process imports
the harness of this checkout (PYTHONPATH), whatever the venv's editable install points at."""
import atexit
import os
import sys

import pytest

from harness import paths
from harness.compile.hip import toolchain as hip_toolchain
from helpers import REPO

HIP_CACHE = hip_toolchain.cache_root()  # taken before any test moves $HOME: the one set up by `make setup`
CHECKOUT_LOGS = REPO / "results" / "logs"

if not paths.REPO_ROOT.samefile(REPO):  # this process would test one checkout and report on another
    raise pytest.UsageError(f"harness is imported from {paths.REPO_ROOT}, not from the checkout under test {REPO}")
os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p])


def _logs_in_checkout() -> set[str]:
    return {p.name for p in CHECKOUT_LOGS.iterdir()} if CHECKOUT_LOGS.is_dir() else set()


_LOGS_BEFORE = pytest.StashKey[set]()


def pytest_configure(config):
    config.stash[_LOGS_BEFORE] = _logs_in_checkout()


def pytest_sessionfinish(session, exitstatus):
    """A test that wrote a worker log into the checkout fails the run (each xdist worker checks too)."""
    written = sorted(_logs_in_checkout() - session.config.stash[_LOGS_BEFORE])
    if written:
        session.config.get_terminal_writer().line(
            f"error: tests wrote {len(written)} worker log(s) into {CHECKOUT_LOGS}: {written[:3]}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _quiet_interpreter_teardown() -> None:
    sys.stderr.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)


def pytest_unconfigure(config):
    """Triton's nanobind bindings list "leaked" default arguments of Gluon's builder when the interpreter ends
    (25 lines, nothing of ours; Triton's compile workers hide them the same way): once pytest has said all, the
    process's teardown writes to /dev/null."""
    atexit.register(_quiet_interpreter_teardown)


@pytest.fixture(autouse=True, scope="session")
def session_results(tmp_path_factory):
    """The results folder of module- and session-scoped fixtures, which run before any test's own."""
    folder = tmp_path_factory.mktemp("session-results")
    names = (paths.RESULTS_ENV, paths.LEDGER_ENV, paths.REMOTE_DIR_ENV, "HARNESS_HIP_CACHE")
    saved = {name: os.environ.pop(name, None) for name in names}
    os.environ[paths.RESULTS_ENV] = str(folder)
    os.environ["HARNESS_HIP_CACHE"] = str(HIP_CACHE)
    yield folder
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def results_dir(tmp_path, monkeypatch):
    """The test's results folder (tmp_path/results); child processes inherit it through the environment."""
    folder = tmp_path / "results"
    monkeypatch.setenv(paths.RESULTS_ENV, str(folder))
    monkeypatch.delenv(paths.LEDGER_ENV, raising=False)
    monkeypatch.delenv(paths.REMOTE_DIR_ENV, raising=False)
    monkeypatch.setenv("HARNESS_HIP_CACHE", str(HIP_CACHE))
    return folder
