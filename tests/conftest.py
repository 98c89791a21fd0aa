"""Every test runs with its own results folder: the ledger, worker logs, raw remote reports and the chart
land under the test's tmp_path, never in the tracked results/ (harness/paths.py reads $HARNESS_RESULTS)."""
import pytest

from harness import paths


@pytest.fixture(autouse=True)
def results_dir(tmp_path, monkeypatch):
    """The test's results folder (tmp_path/results); child processes inherit it through the environment."""
    folder = tmp_path / "results"
    monkeypatch.setenv(paths.RESULTS_ENV, str(folder))
    monkeypatch.delenv(paths.LEDGER_ENV, raising=False)
    monkeypatch.delenv(paths.REMOTE_DIR_ENV, raising=False)
    return folder
