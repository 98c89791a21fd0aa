"""The estimate's shared recordings: what a submission's calls recorded, and what the gfx950 emulator
measured of their launches, kept on disk so that `harness estimate N` run twice records and emulates once.

One entry per call (a worker's good reply to one request), named by the sha256 of all that decides it:
- the submission file's bytes (the HIP or Triton code objects are built from them);
- the request: its op ("estimate" records a call, "trace" traces a HIP file's launches at the shape itself,
  "test" gives the emulated counts), its arguments (shape
  and seed: they fix every input tensor), the worker's kind (its device; plain, interpreted or emulated);
- the sources and data of what the worker runs (harness/** but the parent's display, results, estimate,
  remote, checks and command line; reference.py, task.py, task.yml): the recorder, the stand-in, the
  emulator and its HIP runtime, which make the reply;
- the versions of Python, torch, Triton and aiter, and the LLVM toolchain's path.
A whole call, not one launch: the emulator must run a launch to write what the next launch and the check
read, so a launch can only be skipped with its whole call; the entry keeps each kernel's launches, grid
and counts as the emulator gave them.
Entries are written only after the guarded run found nothing wrong (commit), each to a temporary file
renamed into place: a crash leaves the old entry or the new one, never half of one.
The traces of an emulated call's launches (the timing model's input: the child sends each as .npz bytes)
are files: this process's scratch folder for a call just run, and on commit traces/<sha256>.npz beside
the entries, which name them; a replayed call prices from the same files. An entry naming a trace that is
gone, or an "estimate" entry whose emulated kernels name none (one kept before tracing), is no entry: the
call runs again.
$HARNESS_ESTIMATE_CACHE names the folder (the tests' session folder; "off": none); else
$XDG_CACHE_HOME/amd-mixed-mla/estimate, else ~/.cache/amd-mixed-mla/estimate.
"""
from __future__ import annotations

import atexit
import base64
import functools
import hashlib
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path

from harness import platform as platforms
from harness.paths import REPO_ROOT

ENV = "HARNESS_ESTIMATE_CACHE"
SOURCES = ("*.py", "*.json", "*.yml", "*.yaml", "*.c", "*.cc", "*.cpp", "*.h", "*.hpp", "*.hip", "*.s")
TOP_FILES = ("reference.py", "task.py", "task.yml")
PARENT_ONLY = ("display", "results", "estimate", "remote", "checks", "cli.py", "cli_options.py", "fitted_table.py")
CACHED = "cached"  # the reply's mark: it came from the folder, nothing ran
TRACES = "traces"  # an emulated kernel's launch traces: base64 .npz from the child, then file paths
TRACE_FOLDER = "traces"  # beside the entries, one <sha256>.npz per trace


def folder() -> Path | None:
    """Where entries live, or None when $HARNESS_ESTIMATE_CACHE is "off"."""
    chosen = os.environ.get(ENV)
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "amd-mixed-mla" / "estimate"


@functools.lru_cache(maxsize=1)
def harness_digest() -> str:
    """sha256 over the worker's sources and data, the task files and the versions that make a reply."""
    digest = hashlib.sha256()
    files = {path for pattern in SOURCES for path in (REPO_ROOT / "harness").rglob(pattern)}
    files |= {REPO_ROOT / name for name in TOP_FILES if (REPO_ROOT / name).is_file()}
    for path in sorted(files):
        inside = path.relative_to(REPO_ROOT).parts[1:2]
        if "__pycache__" not in path.parts and not (path.parent != REPO_ROOT and inside[0] in PARENT_ONLY):
            digest.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(json.dumps(platforms.versions(), sort_keys=True).encode())
    digest.update(str(_toolchain()).encode())
    return digest.hexdigest()


def _toolchain() -> str:
    from harness.compile.hip import toolchain

    return str(toolchain.llvm_tool("clang++") or "no LLVM 22")


@functools.lru_cache(maxsize=1)
def scratch() -> Path:
    """This process's folder for the traces of calls just run (removed at exit)."""
    made = Path(tempfile.mkdtemp(prefix="harness-estimate-traces-"))
    atexit.register(shutil.rmtree, made, True)
    return made


def trace_files(reply: dict) -> dict:
    """The reply with each launch trace's bytes written to scratch() and named there by path."""
    def written(text: str) -> str:
        data = base64.b64decode(text)
        path = scratch() / f"{hashlib.sha256(data).hexdigest()}.npz"
        if not path.is_file():
            _write(path, data)
        return str(path)
    return _renamed(reply, written)


def _renamed(reply: dict, rename) -> dict:
    """A copy of the reply whose emulated kernels' traces are rename(each)."""
    emulated = reply.get("emulated") or {}
    if not any(entry.get(TRACES) for entry in emulated.values()):
        return reply
    kernels = {kernel: dict(entry, **{TRACES: [rename(item) for item in entry.get(TRACES) or []]})
               for kernel, entry in emulated.items()}
    return dict(reply, emulated=kernels)


def untraced(op: str, reply: dict) -> list:
    """The emulated kernels of an "estimate" or "trace" reply that name no trace (a reply kept before
    tracing)."""
    emulated = reply.get("emulated") or {}
    return sorted(k for k, entry in emulated.items() if op in ("estimate", "trace") and not entry.get(TRACES))


class Recordings:
    """The entries of one submission's calls in one kind of worker; `hits` counts the calls answered here,
    `traces` the launch traces they named."""

    def __init__(self, submission_path: Path, worker_kind: str, where: Path | None = None):
        self.where = where if where is not None else folder()
        self.worker_kind = worker_kind
        self.file_sha = hashlib.sha256(Path(submission_path).read_bytes()).hexdigest()
        self.pending: dict = {}
        self.pending_traces: set = set()  # scratch files of the pending replies
        self.hits = 0
        self.traces = 0
        self.lock = threading.Lock()  # estimate/workers.py records several shapes at once

    def key(self, op: str, args: dict) -> str:
        request = json.dumps({"op": op, "args": args, "worker": self.worker_kind, "file": self.file_sha,
                              "harness": harness_digest()}, sort_keys=True)
        return hashlib.sha256(request.encode()).hexdigest()

    def get(self, op: str, args: dict) -> dict | None:
        """The kept reply to this request, marked CACHED, or None."""
        if self.where is None:
            return None
        try:
            reply = json.loads((self.where / f"{self.key(op, args)}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # none yet, or unreadable: the call runs again
        named = []
        reply = _renamed(reply, lambda name: named.append(self.where / TRACE_FOLDER / name) or str(named[-1]))
        if untraced(op, reply) or not all(path.is_file() for path in named):
            return None  # kept before tracing, or a trace gone: the call runs again
        with self.lock:
            self.hits += 1
            self.traces += len(named)
        return dict(reply, **{CACHED: True})

    def keep(self, op: str, args: dict, reply: dict) -> None:
        """A good reply, written by commit() once the run is known clean."""
        if self.where is not None and reply.get("ok") and not reply.get(CACHED):
            with self.lock:
                self.pending[self.key(op, args)] = _renamed(reply, lambda path: Path(path).name)
                _renamed(reply, self.pending_traces.add)

    def commit(self) -> None:
        """Each kept reply to its own file, through a temporary file renamed into place."""
        if not self.pending:
            return
        try:
            self.where.mkdir(parents=True, exist_ok=True)
            for path in map(Path, sorted(self.pending_traces)):  # before the entries that name them
                kept = self.where / TRACE_FOLDER / path.name
                kept.parent.mkdir(exist_ok=True)
                if not kept.is_file():
                    _write(kept, path.read_bytes())
            for key, reply in self.pending.items():
                _write(self.where / f"{key}.json", reply)
        except OSError:
            pass  # a cache that cannot be written only costs the next run its time
        self.pending.clear()
        self.pending_traces.clear()


def _write(path: Path, reply) -> None:
    """`reply` (bytes as they are, else as JSON) at `path`, through a temporary file beside it renamed
    into place."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(reply if isinstance(reply, bytes) else json.dumps(reply).encode())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def call(worker, recordings: Recordings | None, op: str, limit_s: float, **args) -> dict:
    """worker.call(op, limit_s, **args), its launch traces as files (trace_files), answered from
    `recordings` where it holds the reply (the worker then never starts) and kept there when good."""
    found = recordings.get(op, args) if recordings is not None else None
    if found is not None:
        return found
    reply = trace_files(worker.call(op, limit_s, **args))
    if recordings is not None and reply.get("ok") and (reply.get("result") or {}).get("good"):
        recordings.keep(op, args, reply)
    return reply
