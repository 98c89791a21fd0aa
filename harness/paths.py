"""Where things live: the repository and the results folder, in one place.

$HARNESS_RESULTS moves the whole results folder (ledger, logs, raw remote reports, chart), which is how
the tests keep every run away from the tracked results/; $HARNESS_LEDGER and $HARNESS_REMOTE_DIR move
just one part.
"""
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS_DIR = REPO_ROOT / "submissions"
TASK_YML = REPO_ROOT / "task.yml"
SCOREBOARD_PAGE = REPO_ROOT / "scoreboard.md"

RESULTS_ENV = "HARNESS_RESULTS"
LEDGER_ENV = "HARNESS_LEDGER"
REMOTE_DIR_ENV = "HARNESS_REMOTE_DIR"


def results_dir() -> Path:
    return Path(os.environ.get(RESULTS_ENV) or REPO_ROOT / "results")


def ledger_file(path: str | os.PathLike | None = None) -> Path:
    """The ledger: the argument, else $HARNESS_LEDGER, else results/ledger.jsonl."""
    return Path(path or os.environ.get(LEDGER_ENV) or results_dir() / "ledger.jsonl")


def log_dir() -> Path:
    """Where each worker's stdout and stderr go."""
    return results_dir() / "logs"


def remote_dir() -> Path:
    """Raw popcorn reports and the sent log."""
    return Path(os.environ.get(REMOTE_DIR_ENV) or results_dir() / "remote")


def scoreboard_chart() -> Path:
    return results_dir() / "scoreboard.png"


def scoreboard_page() -> Path:
    """The repository's scoreboard.md for its own results; beside the results folder when $HARNESS_RESULTS
    moves them elsewhere, so another ledger never rewrites the repository's page."""
    if os.environ.get(RESULTS_ENV) and results_dir().resolve() != (REPO_ROOT / "results").resolve():
        return results_dir() / "scoreboard.md"
    return SCOREBOARD_PAGE


def shown(path: str | os.PathLike, relative_to: str | os.PathLike | None = None) -> str:
    """The path as a user would type it: relative to `relative_to` (default: the working directory) when below it."""
    absolute = Path(path).resolve()
    try:
        return str(absolute.relative_to(Path(relative_to or Path.cwd()).resolve()))
    except ValueError:
        return str(path) if relative_to is None else str(absolute)


def in_repository(path: str | os.PathLike) -> str:
    """The path relative to the repository when the file is inside it, else absolute (what records keep)."""
    return shown(path, REPO_ROOT)
