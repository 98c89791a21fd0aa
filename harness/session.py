"""One `harness run`: the settings this machine implies, each submission evaluated and recorded, the exit code.

The decisions a run takes before and after the protocol itself: which cases (official on a GPU, small
on a CPU), whether the requested flush can work here, the secret seed, the time limit; then per
submission protocol.evaluate, its record appended to the ledger; last, the exit code.
"""
import dataclasses

from harness import cases, ledger, protocol, timing
from harness import platform as platforms
from harness.submission import Submission

TIMED_MODES = ("benchmark", "leaderboard")


@dataclasses.dataclass
class Settings:
    platform: platforms.Platform
    mode: str
    specs: list
    cases_name: str
    flush: str
    timeout_s: float
    secret: int | None
    notices: list  # one line each, for the user: what was chosen for them


def settle(*, device: str, mode: str, cases_arg: str | None, flush: str, timeout_s: float | None) -> Settings:
    """The run's settings on this machine; CaseError / PlatformError (one line) for what cannot work here."""
    here = platforms.detect(device)
    notices = []
    if cases_arg is None:
        cases_arg = "official" if here.is_gpu else "small"
        if not here.is_gpu:
            notices.append("No GPU here: using the small CPU cases (--cases official forces the official shapes).")
    specs = cases.load(cases_arg, mode)
    if not here.is_gpu and flush == "official" and mode in TIMED_MODES:
        notices.append("On the CPU there is no cache flush: --flush official is ignored.")
    if here.is_gpu and flush == "official" and mode in TIMED_MODES and not timing.official_flush_fits():
        raise platforms.PlatformError("--flush official allocates 64 GiB per call, more than this GPU holds; "
                                      "use --flush fast")
    try:
        secret = protocol.secret_seed()
    except ValueError as error:
        raise cases.CaseError(str(error)) from None
    return Settings(platform=here, mode=mode, specs=specs, cases_name=cases_arg, flush=flush,
                    timeout_s=timeout_s or cases.case_timeout_s(mode), secret=secret, notices=notices)


@dataclasses.dataclass
class Outcome:
    run: protocol.RunResult
    record: dict
    ledger_error: str | None  # why the record could not be written, None when it was


def evaluate_and_record(submission: Submission, settings: Settings, progress=protocol._no_progress) -> Outcome:
    """protocol.evaluate for one submission, then its record appended to the ledger."""
    run = protocol.evaluate(submission, settings.platform, settings.mode, settings.specs,
                            cases_name=settings.cases_name, flush=settings.flush, timeout_s=settings.timeout_s,
                            secret=settings.secret, progress=progress)
    record = protocol.record(run)
    try:
        ledger.append(record)
    except OSError as error:
        return Outcome(run, record, str(error))
    return Outcome(run, record, None)


def exit_code(runs: list) -> int:
    """0 when everything that could run passed, 1 when a submission failed or errored."""
    return 1 if any(run.failed for run in runs) else 0
