"""The parent's handle on a submission's worker process (the child is harness/run/child.py).

`Worker.call(op, timeout_s, **args)` sends one request and waits for the reply, like the official
eval.py's pool.apply. A crash (non-zero exit, signal) or a case that runs past its limit kills the
child and becomes an error/timeout reply with one clear reason; the next call starts a fresh child.
The child answers over a private pipe that nothing the submission starts can inherit (like the
official PopcornOutput); its stdout and stderr go to a log file, of which the parent shows only a
capped tail. Message shapes are in harness/run/child.py. The gfx950 emulator's progress lines of the
request under way come over the same pipe before its reply; `on_progress(line)` gets each of them.
"""
import json
import os
import secrets
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.emulator.counts import add_launches
from harness.paths import REPO_ROOT

MAX_MESSAGE_CHARS = 4000  # a reply's message is capped so a giant mismatch report cannot flood the parent
LOG_TAIL_LINES = 20
LOG_TAIL_CHARS = 2000
LOG_LINE_CHARS = 240  # one flooded line must not fill the tail
PROGRESS_PREFIX = b'{"progress": '  # how child.ReplyPipe.progress's lines begin (json.dumps of its dict)
EXIT_GRACE_S = 10.0  # how long a child may take to exit after its requests pipe closes
# Starting a child (interpreter, torch, reference) is not charged to the first case; it gets its own limit.
STARTUP_LIMIT_S = 300.0


def child_environment(device: str, triton_interpreter: bool, base: dict | None = None,
                      emulator: dict | None = None) -> dict:
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
    env.update(emulator or {})  # kernels on the gfx950 emulator (platform.emulator_environment)
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


def cap(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 40] + f" ... [{len(text) - limit + 40} chars cut]"


class Worker:
    """A child process that serves one submission; restarted after any crash, timeout or exception."""

    def __init__(self, submission_path: Path, device: str, log_path: Path, triton_interpreter: bool = False,
                 jail=None, on_start=None, emulator: dict | None = None, on_progress=None):
        self.submission_path = Path(submission_path)
        self.on_start = on_start  # called before each child starts (1-2 s), so that the user sees why it waits
        self.on_progress = on_progress  # called with each emulator progress line of a request under way
        self.jail = jail  # harness/sandbox/guard.py's Jail: the sandbox or the private copies the child runs in
        self.device = device
        self.log_path = Path(log_path)
        self.env = child_environment(device, triton_interpreter, emulator=emulator)
        self._process = None
        self._requests = None  # parent's write end
        self._replies = None  # parent's read end
        self._buffer = b""
        self._import_failure = None  # the reply of a failed import: every later call would fail the same way
        self.standin = None  # "aiter" once the child said the aiter stand-in served the submission
        self.emulated: dict = {}  # kernel -> launches, seconds, counts: what the gfx950 emulator ran

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
            parent = 0 if self.jail is not None and self.jail.hides_parent else os.getpid()
            argv = [sys.executable, "-m", "harness.run.child", "--submission", str(self.submission_path),
                    "--request-fd", str(request_read), "--reply-fd", str(reply_write), "--parent", str(parent)]
            argv, env, cwd = self.jail.wrap(argv, self.env) if self.jail is not None else (argv, self.env, REPO_ROOT)
            self._process = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
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

    def interrupt(self) -> None:
        """From another thread (Ctrl-C while several record): the child ends now, and the call
        waiting on it returns as a crash; the worker's own thread then closes it."""
        process = self._process
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

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
            if self.on_start is not None:
                self.on_start()
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
            while line is not None and self._relayed(line, nonce):
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
        self.standin = reply.get("standin") or self.standin
        add_launches(self.emulated, reply.get("emulated") or {})  # over the child's replies
        if not reply.get("ok"):
            # A Python exception may leave the device in a bad state (illegal address...): start afresh.
            self.close()
            failed = self._failed(reply.get("status", "error"), reply.get("message", "unknown error"), log_offset)
            if reply.get("import_failed"):
                self._import_failure = failed
            return failed
        return reply

    def _relayed(self, line: bytes, nonce: str) -> bool:
        """True for a progress line of this request (passed to on_progress, printable and capped); False for
        anything else, which is then read as the reply."""
        if not line.startswith(PROGRESS_PREFIX):  # a reply may be large: parsed once, by call
            return False
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            return False
        if message.get("nonce") != nonce or not isinstance(message.get("progress"), str):
            return False
        if self.on_progress is not None:
            shown = "".join(char for char in message["progress"] if char.isprintable())
            self.on_progress(shown[:LOG_LINE_CHARS])
        return True

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
        if self.jail is not None:
            returncode = self.jail.returncode(returncode)
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
