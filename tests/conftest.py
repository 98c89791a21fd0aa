"""Every test runs with its own results folder: the ledger, worker logs, raw remote reports and the chart
land under the test's tmp_path, never in the tracked results/ (harness/paths.py reads $HARNESS_RESULTS).
The HIP toolchain cache is pinned too, so tests that move $HOME still find it."""
import pytest

from harness import paths
from harness.compile.hip import toolchain as hip_toolchain

HIP_CACHE = hip_toolchain.cache_root()  # taken before any test moves $HOME: the one set up by `make setup`


@pytest.fixture(autouse=True)
def results_dir(tmp_path, monkeypatch):
    """The test's results folder (tmp_path/results); child processes inherit it through the environment."""
    folder = tmp_path / "results"
    monkeypatch.setenv(paths.RESULTS_ENV, str(folder))
    monkeypatch.delenv(paths.LEDGER_ENV, raising=False)
    monkeypatch.delenv(paths.REMOTE_DIR_ENV, raising=False)
    monkeypatch.setenv("HARNESS_HIP_CACHE", str(HIP_CACHE))
    return folder
