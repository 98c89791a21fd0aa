"""Every test runs with its own results folder: the ledger, worker logs, raw remote reports and the chart
land under the test's tmp_path, never in the tracked results/ (harness/paths.py reads $HARNESS_RESULTS).
Fixtures wider than one test (module and session scope) get a session folder, set before any of them runs.
The HIP toolchain cache is pinned too, so tests that move $HOME still find it. Every child process imports
the harness of this checkout (PYTHONPATH), whatever the venv's editable install points at."""
import atexit
import os
import sys
from pathlib import Path

import pytest

import suite_time
from harness import paths
from harness.compile.hip import toolchain as hip_toolchain
from helpers import REPO

HIP_CACHE = hip_toolchain.cache_root()  # taken before any test moves $HOME: the one set up by `make setup`
CHECKOUT_LOGS = REPO / "results" / "logs"

if not paths.REPO_ROOT.samefile(REPO):  # this process would test one checkout and report on another
    raise pytest.UsageError(f"harness is imported from {paths.REPO_ROOT}, not from the checkout under test {REPO}")
os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
# One OpenMP thread per test process and child (set before any imports torch): make test runs two
# workers on two cores, and a torch op whose second thread is descheduled waits for it (3-20x the CPU).
os.environ.setdefault("OMP_NUM_THREADS", "1")


def _logs_in_checkout() -> set[str]:
    return {p.name for p in CHECKOUT_LOGS.iterdir()} if CHECKOUT_LOGS.is_dir() else set()


_LOGS_BEFORE = pytest.StashKey[set]()
# seconds per test and the slow-marked ones, as this process sees the reports (xdist: the controller)
MEASURED: dict[str, float] = {}
MARKED_SLOW: set[str] = set()


def pytest_addoption(parser):
    parser.addoption("--record-durations", metavar="PATH", default=None,
                     help="write each test's seconds (setup + call + teardown) as JSON: tests/durations.json")


def pytest_configure(config):
    config.stash[_LOGS_BEFORE] = _logs_in_checkout()
    # xdist would re-sort the work units by their number of tests; ours (longest first) is the point
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Notes which collected tests are marked slow, before -m or -k leave any out; under xdist, where each
    worker collects the same items, orders them longest first (suite_time.py)."""
    config.stash[suite_time.SLOW_MARKS] = {suite_time.plain_id(item.nodeid): item.get_closest_marker("slow")
                                           is not None for item in items}
    if hasattr(config, "workerinput"):
        items[:] = suite_time.longest_first(items, suite_time.load())


def pytest_runtest_logreport(report):
    nodeid = suite_time.plain_id(report.nodeid)
    MEASURED[nodeid] = MEASURED.get(nodeid, 0.0) + report.duration
    if "slow" in report.keywords:
        MARKED_SLOW.add(nodeid)


def pytest_terminal_summary(terminalreporter, config):
    """Tests over SLOW_S without the slow mark: make test-fast still runs them (issue 37)."""
    if hasattr(config, "workerinput"):  # an xdist worker saw only its share: the controller writes
        return
    over = suite_time.unmarked_slow(MEASURED, MARKED_SLOW)
    if over:
        terminalreporter.write_line(f"{len(over)} test(s) over {suite_time.SLOW_S:g} s not marked slow:", yellow=True)
        for nodeid, seconds in over:
            terminalreporter.write_line(f"  {seconds:6.1f}s {nodeid}")
    target = config.getoption("--record-durations")
    if target and MEASURED:
        suite_time.write(MEASURED, Path(target), f"seconds per test (setup + call + teardown), written by "
                                                 f"--record-durations: {' '.join(config.invocation_params.args)}")


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
    names = (paths.RESULTS_ENV, paths.LEDGER_ENV, paths.REMOTE_DIR_ENV, "HARNESS_HIP_CACHE", "HARNESS_ESTIMATE_CACHE")
    saved = {name: os.environ.pop(name, None) for name in names}
    os.environ[paths.RESULTS_ENV] = str(folder)
    # the estimate tests share their recordings within the session (harness/estimate/recordings.py)
    os.environ["HARNESS_ESTIMATE_CACHE"] = str(tmp_path_factory.mktemp("estimate-recordings"))
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


@pytest.fixture(scope="session")
def estimate_201_small():
    """`harness estimate 201` on the CPU at 4x1024 (64 KV rows a call), emulated counts included: one run
    (~90 s of CPU) that test_kernel_model and test_estimate_path both read (their xdist group is one)."""
    from harness import platform as platforms, submission as subs
    from harness.estimate import runner

    small = {"batchsize": 4, "qseqlen": 1, "kvseqlen": 1024, "seed": 4217}
    return runner.run(subs.resolve("201"), platforms.detect("cpu"), specs=[small], budget=64)
