"""Each submission runs in its own child process: `python -m harness.worker`.

Parent side: `Worker.call(op, timeout_s, **args)` sends one request and waits for the reply, like the
official eval.py's pool.apply. A crash (non-zero exit, signal) or a case that runs past its limit
kills the child and becomes an error/timeout reply with one clear reason; the next call starts a fresh
child. Child side: `child_main` imports the submission as module `submission` (lazily, on first use,
as eval.py does), serves requests with harness.protocol's child operations and answers over a private
pipe that nothing the submission starts can inherit (like the official PopcornOutput). The child's
stdout and stderr go to a log file; the parent shows only a capped tail. The child never writes the ledger.

Messages are JSON lines. Request: {"op": "test" | "benchmark" | "profile", "args": {...}}.
Reply: {"ok": true, "result": {...}} or {"ok": false, "status": "error" | "timeout", "message": "..."}.
A child announces itself with {"ready": true} once torch and reference.py are imported.
"""
import argparse
import ctypes
import errno
import importlib.abc
import importlib.util
import json
import os
import resource
import secrets
import select
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LOG_DIR = REPO_ROOT / "results" / "logs"

MAX_MESSAGE_CHARS = 4000  # a reply's message is capped so a giant mismatch report cannot flood the parent
LOG_TAIL_LINES = 20
LOG_TAIL_CHARS = 2000
LOG_LINE_CHARS = 240  # one flooded line must not fill the tail
EXIT_GRACE_S = 10.0  # how long a child may take to exit after its requests pipe closes
# Starting a child (interpreter, torch, reference) is not charged to the first case; it gets its own limit.
STARTUP_LIMIT_S = 300.0

# Limits on the child (environment variables override them; sizes like 512M, 8G or plain bytes).
MEMORY_LIMIT_ENV = "HARNESS_WORKER_MEMORY_LIMIT"  # address space of a CPU worker (GPU drivers map huge ranges)
OUTPUT_LIMIT_ENV = "HARNESS_WORKER_OUTPUT_LIMIT"  # largest file the child may write, its log included
DEFAULT_MEMORY_LIMIT = 16 << 30  # or half the machine's memory, whichever is smaller
DEFAULT_OUTPUT_LIMIT = 256 << 20  # room for compiler outputs (the limit covers every file the child writes)


def child_environment(device: str, triton_interpreter: bool, base: dict | None = None) -> dict:
    """The child's environment: POPCORN_SEED removed (as eval.py does), device pinned, task/reference on the path."""
    env = dict(os.environ if base is None else base)
    env.pop("POPCORN_SEED", None)
    env["MLA_DEVICE"] = device
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    if device == "cpu":
        # --device cpu on a GPU machine: the submission must not reach the GPU either.
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["HIP_VISIBLE_DEVICES"] = ""
        # Every CPU allocation starts as 0x7F bytes (glibc; macOS scribbles 0xAA), so a torch.empty output
        # can never hold a stale right answer, such as the warm-up's reference output for the same seed.
        env.setdefault("MALLOC_PERTURB_", "128")
        env.setdefault("MallocPreScribble", "1")
    if triton_interpreter:
        env["TRITON_INTERPRET"] = "1"
    return env


def exit_reason(returncode: int) -> str:
    """'killed by signal 11 (SIGSEGV)' or 'exited with code 3'."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown signal"
        return f"killed by signal {-returncode} ({name})"
    return f"exited with code {returncode}"


def parse_size(text: str) -> int:
    """'512M', '8G', '1.5GiB' or a plain number of bytes; ValueError otherwise."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(text[-1:], 1)
    number = float(text[:-1] if scale > 1 else text)
    if not 0 < number < float("inf"):  # also refuses nan
        raise ValueError(f"not a positive size: {text!r}")
    return int(number * scale)


def format_size(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} bytes"


def _size_setting(environ, name: str, default: int) -> int:
    """A size from the environment; the default when it is unset or not a size (invalid_limits says so)."""
    try:
        return parse_size(environ[name]) if environ.get(name) else default
    except ValueError:
        return default


def memory_limit(environ=os.environ) -> int:
    """The CPU worker's address-space limit: $HARNESS_WORKER_MEMORY_LIMIT, else min(16 GiB, half the RAM)."""
    try:
        default = min(DEFAULT_MEMORY_LIMIT, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2)
    except (ValueError, OSError):
        default = DEFAULT_MEMORY_LIMIT
    return _size_setting(environ, MEMORY_LIMIT_ENV, default)


def output_limit(environ=os.environ) -> int:
    """The largest file the worker may write (its log): $HARNESS_WORKER_OUTPUT_LIMIT, else 256 MiB."""
    return _size_setting(environ, OUTPUT_LIMIT_ENV, DEFAULT_OUTPUT_LIMIT)


def invalid_limits(environ=os.environ) -> list:
    """One line per limit setting that is not a size (the worker then uses the default)."""
    found = []
    for name in (MEMORY_LIMIT_ENV, OUTPUT_LIMIT_ENV):
        if environ.get(name):
            try:
                parse_size(environ[name])
            except ValueError:
                found.append(f"{name}={environ[name]!r} is not a size like 8G or 512M; using the default")
    return found


def cap(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 40] + f" ... [{len(text) - limit + 40} chars cut]"


class Worker:
    """A child process that serves one submission; restarted after any crash, timeout or exception."""

    def __init__(self, submission_path: Path, device: str, log_path: Path, triton_interpreter: bool = False):
        self.submission_path = Path(submission_path)
        self.device = device
        self.log_path = Path(log_path)
        self.env = child_environment(device, triton_interpreter)
        self._process = None
        self._requests = None  # parent's write end
        self._replies = None  # parent's read end
        self._buffer = b""
        self._import_failure = None  # the reply of a failed import: every later call would fail the same way

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        elif self._process is not None:  # interrupted (Ctrl-C...): do not wait for the case to finish
            self._kill()
            self._forget()

    # -- lifecycle -------------------------------------------------------------------------------

    def _start(self) -> None:
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(f"=== worker started {time.strftime('%Y-%m-%d %H:%M:%S')} ===\n".encode())
            log.flush()
            self._process = subprocess.Popen(
                [sys.executable, "-m", "harness.worker", "--submission", str(self.submission_path),
                 "--request-fd", str(request_read), "--reply-fd", str(reply_write), "--parent", str(os.getpid())],
                cwd=REPO_ROOT, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                pass_fds=(request_read, reply_write), start_new_session=True,
            )
        os.close(request_read)
        os.close(reply_write)
        self._requests, self._replies, self._buffer = request_write, reply_read, b""

    def close(self) -> None:
        """Ask the child to finish (its requests pipe closes), then make sure it is gone."""
        if self._process is None:
            return
        os.close(self._requests)
        self._requests = None
        try:
            self._process.wait(timeout=EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            self._kill()
        self._forget()

    def _kill(self) -> None:
        # The child leads its own session, so this ends it and anything it started (compilers, helpers).
        try:
            os.killpg(self._process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._process.wait()

    def _forget(self) -> None:
        for fd in (self._requests, self._replies):
            if fd is not None:
                os.close(fd)
        self._process, self._requests, self._replies = None, None, None

    # -- one request -----------------------------------------------------------------------------

    def _wait_until_ready(self) -> str:
        """'' once the child said it is ready, else why it did not get there (it is then gone)."""
        try:
            line = self._read_line(time.monotonic() + STARTUP_LIMIT_S)
        except EOFError:
            return f"the worker died while starting: {self._crash_reason()}"
        if line is None:
            self._kill()
            self._forget()
            return f"the worker did not start within {STARTUP_LIMIT_S:g} s"
        return ""

    def call(self, op: str, timeout_s: float, **args) -> dict:
        """Run one operation in the child; always returns a reply dict, never raises for the child's faults."""
        if self._import_failure is not None:
            return dict(self._import_failure, log_tail="")  # the first case already showed the worker's output
        if self._process is None:
            self._start()
            problem = self._wait_until_ready()
            if problem:
                return self._failed("error", problem, 0)
        log_offset = self._log_size()
        deadline = time.monotonic() + timeout_s
        # The reply must echo this: a line the submission writes to the pipe itself does not know it.
        nonce = secrets.token_hex(16)
        try:
            os.write(self._requests, (json.dumps({"op": op, "args": args, "nonce": nonce}) + "\n").encode())
            line = self._read_line(deadline)
        except (BrokenPipeError, EOFError):
            return self._failed("error", self._crash_reason(), log_offset)
        if line is None:
            self._kill()
            self._forget()
            return self._failed("timeout", f"exceeded the {timeout_s:g} s case limit", log_offset)
        try:
            reply = json.loads(line)
        except json.JSONDecodeError:
            self._kill()
            self._forget()
            return self._failed("error", "the worker sent an unreadable reply", log_offset)
        if not isinstance(reply, dict) or reply.get("nonce") != nonce:
            self._kill()
            self._forget()
            return self._failed("error", "forged reply: a line the harness did not write came back on the worker's "
                                "private result pipe", log_offset)
        if not reply.get("ok"):
            # A Python exception may leave the device in a bad state (illegal address...): start afresh.
            self.close()
            failed = self._failed(reply.get("status", "error"), reply.get("message", "unknown error"), log_offset)
            if reply.get("import_failed"):
                self._import_failure = failed
            return failed
        return reply

    def _read_line(self, deadline: float) -> bytes | None:
        """One reply line, or None at the deadline; EOFError when the child closed its end (it died)."""
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self._replies], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self._replies, 1 << 16)
            if not chunk:
                raise EOFError
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _crash_reason(self) -> str:
        """Why the child stopped answering (it is gone afterwards)."""
        try:
            returncode = self._process.wait(timeout=EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            self._kill()
            self._forget()
            return "the worker closed its reply pipe but did not exit (killed)"
        self._forget()
        if returncode == 0:
            return "the worker exited (code 0) before replying"
        return exit_reason(returncode)

    def _failed(self, status: str, message: str, log_offset: int) -> dict:
        return {"ok": False, "status": status, "message": cap(message), "log_tail": self._log_tail(log_offset)}

    def _log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except OSError:
            return 0

    def _log_tail(self, offset: int) -> str:
        """The last lines the child printed since `offset`, capped."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(max(offset, self._log_size() - 64 * LOG_TAIL_CHARS))
                text = log.read().decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [line if len(line) <= LOG_LINE_CHARS else line[:LOG_LINE_CHARS] + " [...]"
                 for line in text.splitlines()[-LOG_TAIL_LINES:]]
        return "\n".join(lines)[-LOG_TAIL_CHARS:]


# ---------------------------------------------------------------------------------------------
# Child side
# ---------------------------------------------------------------------------------------------

class _SubmissionFinder(importlib.abc.MetaPathFinder):
    """Makes `import submission` load the submission file, as the official runner's submission.py."""

    def __init__(self, path: str):
        self.path = path

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "submission":
            return None
        return importlib.util.spec_from_file_location("submission", self.path)


def _one_line_error(exc: BaseException, submission_path: str) -> str:
    """'ValueError: bad shape (submission line 12)': the exception and the deepest frame in the submission."""
    from harness.protocol import Verdict

    if isinstance(exc, Verdict):  # the harness's own words, plus where in the submission the cause arose
        return f"{exc}{_submission_line(exc.__cause__, submission_path)}" if exc.__cause__ else str(exc)
    where = _submission_line(exc, submission_path)
    first_line = (str(exc).strip().splitlines() or [""])[0]
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


def _print_submission_traceback(exc: BaseException) -> None:
    """The traceback into the worker's log, without the harness's own frames (users debug their code, not ours)."""
    from harness.protocol import Verdict

    harness_dir = str(REPO_ROOT / "harness") + os.sep
    origin = exc.__cause__ or exc.__context__  # what went wrong in the submission, behind our own wording
    shown = origin if isinstance(exc, Verdict) and origin is not None and not isinstance(origin, Verdict) else exc
    if isinstance(shown, Verdict):
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


def _apply_limits() -> None:
    """Cap what the child may write (its log included) and, on the CPU, how much memory it may map."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the cap a write fails with EFBIG instead of killing us
    cap_bytes = output_limit()
    resource.setrlimit(resource.RLIMIT_FSIZE, (cap_bytes, cap_bytes))
    if os.environ.get("MLA_DEVICE") == "cpu":
        limit = memory_limit()
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to kill this child when the harness dies (kill -9 included), so no orphan spins on."""
    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the closed requests pipe still ends an idle child
    if os.getppid() != parent_pid:  # the parent died before the request above took effect
        os._exit(1)


def child_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.worker")
    parser.add_argument("--submission", required=True)
    parser.add_argument("--request-fd", type=int, required=True)
    parser.add_argument("--reply-fd", type=int, required=True)
    parser.add_argument("--parent", type=int, required=True)
    options = parser.parse_args(argv)
    _die_with_parent(options.parent)
    _apply_limits()
    # Nothing the submission starts may inherit the pipes (it could forge replies).
    os.set_inheritable(options.request_fd, False)
    os.set_inheritable(options.reply_fd, False)
    submission_path = os.path.abspath(options.submission)
    sys.path.insert(0, str(REPO_ROOT))
    sys.meta_path.insert(0, _SubmissionFinder(submission_path))

    import reference  # noqa: F401  (imported before "ready" so its cost is not charged to the first case)
    from harness import protocol

    protocol.trust_current_environment()  # the originals, taken before the submission is imported
    requests = os.fdopen(options.request_fd, "r")
    replies = os.fdopen(options.reply_fd, "w")
    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    for line in requests:
        request = json.loads(line)
        try:
            operation = protocol.CHILD_OPERATIONS[request["op"]]
            reply = {"ok": True, "result": operation(**request["args"])}
        except Exception as exc:  # the submission's fault: report it, keep the harness alive
            _print_submission_traceback(exc)
            reply = {"ok": False, "status": "error", "message": _one_line_error(exc, submission_path),
                     "import_failed": isinstance(exc, protocol.SubmissionImportError)}
        reply["nonce"] = request.get("nonce")
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
    return 0


if __name__ == "__main__":
    sys.exit(child_main())
