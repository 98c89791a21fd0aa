"""The submission's faults, each worded in one line for the run's table (child side): the harness's own verdicts,
import failures, and exceptions named by type with the submission's line; tracebacks go to the worker's log."""
import errno
import os
import sys
import traceback

from harness.aiter_standin.errors import StandInError
from harness.paths import REPO_ROOT
from harness.run.limits import format_size, memory_limit, output_limit
from harness.sandbox import inside


class Verdict(Exception):
    """A failure the harness words itself: reported as str(exc), without a type name."""


class SubmissionImportError(Verdict):
    """The submission could not be imported; every later case would fail the same way."""


class TamperError(Verdict):
    """The submission replaced something the evaluation relies on."""


CUDA_ON_CPU = ("this run is on the CPU, but the submission asks for a CUDA device (device=\"cuda\" hard-coded? "
               "use the inputs' device, q.device)")


def _asks_for_cuda_on_cpu(first_line: str) -> bool:
    """torch's words for a CUDA device on a CPU-only run (the emulator's child maps "cuda" and never says them)."""
    return os.environ.get("MLA_DEVICE") == "cpu" and ("not compiled with CUDA" in first_line
                                                     or "NVIDIA driver" in first_line)


def import_failure(exc: Exception) -> str:
    """'SyntaxError: '(' was never closed (submission line 9)' or the exception's first line."""
    first_line = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg} (submission line {exc.lineno})"
    if isinstance(exc, StandInError):  # the stand-in's own words: which aiter name or argument, and why
        return f"{first_line} (while importing the submission)"
    if inside.read_only_write(exc, REPO_ROOT):
        return f"{inside.read_only_write(exc, REPO_ROOT)} while importing the submission"
    if _asks_for_cuda_on_cpu(first_line):
        return f"{CUDA_ON_CPU} while importing the submission"
    return f"{type(exc).__name__} while importing the submission: {first_line}"


def one_line_error(exc: BaseException, submission_path: str) -> str:
    """'ValueError: bad shape (submission line 12)': the exception and the deepest frame in the submission."""
    if isinstance(exc, Verdict):  # the harness's own words, plus where in the submission the cause arose
        return f"{exc}{_submission_line(exc.__cause__, submission_path)}" if exc.__cause__ else str(exc)
    where = _submission_line(exc, submission_path)
    first_line = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, StandInError):  # a refusal or an uncovered aiter name: the stand-in's words, no type name
        return f"{first_line}{where}"
    if _asks_for_cuda_on_cpu(first_line):
        return f"{CUDA_ON_CPU}{where}"
    if inside.read_only_write(exc, REPO_ROOT):
        return f"{inside.read_only_write(exc, REPO_ROOT)}{where}"
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
        return (f"output cap: the submission wrote more than {format_size(output_limit())} to stdout/stderr "
                f"(the worker's log is capped){where}")
    if _is_out_of_memory(exc):
        limit = f"; a CPU worker may map {format_size(memory_limit())}" if os.environ.get("MLA_DEVICE") == "cpu" else ""
        return f"out of memory: {type(exc).__name__}: {first_line}{where}{limit}"
    return f"{type(exc).__name__}: {first_line}{where}".rstrip()


def _submission_line(exc: BaseException, submission_path: str) -> str:
    """' (submission line 12)' for the deepest frame of the traceback inside the submission, else ''."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == submission_path:
            where = f" (submission line {frame.lineno})"
    return where


def _is_out_of_memory(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def print_submission_traceback(exc: BaseException) -> None:
    """The traceback into the worker's log, without the harness's own frames (users debug their code, not ours)."""
    harness_dir = str(REPO_ROOT / "harness") + os.sep
    origin = exc.__cause__ or exc.__context__  # what went wrong in the submission, behind our own wording
    shown = origin if isinstance(exc, Verdict) and origin is not None and not isinstance(origin, Verdict) else exc
    if isinstance(shown, (Verdict, StandInError)):
        text = f"{shown}\n"  # the harness's own words; there is no traceback to show
    else:
        frames = [f for f in traceback.extract_tb(shown.__traceback__) if not f.filename.startswith(harness_dir)]
        text = "".join(["Traceback (harness frames left out):\n", *traceback.format_list(frames),
                        *traceback.format_exception_only(type(shown), shown)])
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except OSError:
        pass  # past the output cap: the reply still says what happened
