"""Which protection a run gets, and one submission's run under it: scratch space, the child's command, the checks after.

  sandbox (bwrap)        where bubblewrap starts: the child sees a read-only filesystem but for its scratch folder,
                         no network, and a PID namespace that ends with it (harness/sandbox/bwrap.py);
  fallback: file checks  elsewhere: the child imports private copies of reference.py, task.py and the harness, and
                         every file the parent trusts is checked after the run and put back (harness/sandbox/filecheck.py);
  off                    only when asked (`--protection off`), to compare timings.
Either way the child's HOME, TMPDIR and Triton / torch-extension caches are the run's scratch folder, and every
process the run left behind is killed when it ends, grandchildren that called setsid() included.
"""
import dataclasses
import fcntl
import os
import shutil
import site
import subprocess
import tempfile
import time
from pathlib import Path

from harness import paths
from harness.compile.hip import toolchain
from harness.platform import PlatformError
from harness.sandbox import bwrap, filecheck, procs

CHOICES = ("auto", "sandbox", "files", "off")
LABELS = {"sandbox": "sandbox (bwrap)", "files": "fallback: file checks", "off": "off"}
PRIVATE_CODE = ("reference.py", "task.py", "task.yml")  # plus the harness package
SCRATCH_PREFIX = "harness-run-"  # then the pid of the harness that made it


class ProtectionError(PlatformError):
    """The requested protection cannot work here (one line for the user)."""


@dataclasses.dataclass(frozen=True)
class Protection:
    kind: str  # "sandbox" | "files" | "off"
    note: str  # why this one: what keeps the sandbox from starting, or that it was asked for

    @property
    def label(self) -> str:
        return LABELS[self.kind]

    def describe(self) -> str:
        return f"{self.label} ({self.note})" if self.note else self.label


def choose(requested: str = "auto") -> Protection:
    """The protection for `requested` on this machine; ProtectionError when a sandbox is demanded and cannot start."""
    if requested not in CHOICES:
        raise ProtectionError(f"unknown protection {requested!r}: use one of {', '.join(CHOICES)}")
    if requested == "off":
        return Protection("off", "--protection off: nothing keeps the submission from changing files on disk")
    if requested == "files":
        return Protection("files", "--protection files")
    problem = bwrap.why_not()
    if not problem:
        return Protection("sandbox", "")
    if requested == "sandbox":
        raise ProtectionError(f"--protection sandbox: {problem}")
    return Protection("files", problem)


def repository_files(root: Path = paths.REPO_ROOT) -> list[Path]:
    """Tracked and untracked-but-not-ignored files of the checkout, and every file under harness/ (bytecode too)."""
    listed = []
    try:
        found = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                               capture_output=True, timeout=60)
        if found.returncode == 0:
            listed = [root / name for name in found.stdout.decode("utf-8", "replace").split("\0") if name]
    except (OSError, subprocess.SubprocessError):
        pass
    if not listed:  # not a git checkout: what the harness imports and the submissions
        listed = [root / name for name in PRIVATE_CODE] + filecheck.tree(root / "submissions")()
    return listed + filecheck.tree(root / "harness")()


def copy_private_code(target: Path, root: Path = paths.REPO_ROOT) -> None:
    """reference.py, task.py, task.yml and the harness package, for a child that must not import the originals."""
    target.mkdir(parents=True)
    shutil.copytree(root / "harness", target / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    for name in PRIVATE_CODE:
        if (root / name).is_file():
            shutil.copy2(root / name, target / name)


def remove_orphaned_scratch(folder: Path | None = None) -> None:
    """Scratch folders left by a harness that was killed (kill -9 skips the clean-up) go when the next run starts."""
    for scratch in Path(folder or tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        owner = scratch.name[len(SCRATCH_PREFIX):].split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists() and Path("/proc/self").exists():
            shutil.rmtree(scratch, ignore_errors=True)


class Jail:
    """How the worker starts the child under a protection: its command, environment and folder."""

    def __init__(self, kind: str, scratch: Path):
        self.kind, self.scratch = kind, scratch
        self.code = scratch / "code" if kind == "files" else None
        self.hides_parent = kind == "sandbox"  # in its own PID namespace the child cannot see the harness's pid

    def wrap(self, argv: list[str], env: dict) -> tuple[list[str], dict, Path]:
        env = dict(env)
        folders = {"HOME": "home", "TMPDIR": "tmp", "TRITON_CACHE_DIR": "triton", "TORCH_EXTENSIONS_DIR":
                   "torch_extensions", "XDG_CACHE_HOME": "cache"}
        for name, folder in folders.items():
            (self.scratch / folder).mkdir(exist_ok=True)
            env[name] = str(self.scratch / folder)
        # No bytecode written anywhere; an empty pycache prefix would re-compile torch in every child (~4 s of CPU)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.setdefault("PYTHONUSERBASE", site.getuserbase())  # packages installed with --user stay importable
        work = self.scratch / "work"
        work.mkdir(exist_ok=True)
        if self.code is not None:
            entries = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep)
                       if entry and Path(entry).resolve() != paths.REPO_ROOT]
            env["PYTHONPATH"] = os.pathsep.join([str(self.code)] + entries)
        if self.kind == "sandbox":
            argv = bwrap.command(argv, str(self.scratch), str(work), bwrap.executable() or "bwrap")
        return argv, env, work

    def returncode(self, code: int) -> int:
        return bwrap.returncode(code) if self.kind == "sandbox" else code


class Watch:
    """One submission's run under a protection: `with Watch(p) as watch:` run it with `watch.jail`, then `problems()`."""

    def __init__(self, protection: Protection, aside: Path | None = None):
        self.protection = protection
        self.aside = aside or paths.log_dir() / f"tampered-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        self.jail = None
        self.snapshot = None
        self._scratch = None
        self._ledger_lock = None
        self._spared: set = set()
        self._checked = False

    def __enter__(self):
        if self.protection.kind == "off":
            return self
        remove_orphaned_scratch()
        self._scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
        self.jail = Jail(self.protection.kind, self._scratch)
        procs.become_subreaper()  # orphans of the run come back here, where the end of the run finds them
        self._spared = set(procs.descendants(os.getpid()))
        if self.protection.kind == "files":
            copy_private_code(self.jail.code)
            self._hold_ledger()
            self.snapshot = filecheck.Snapshot([repository_files, filecheck.fixed([paths.ledger_file()]),
                                                filecheck.tree(toolchain.cache_root()), filecheck.tree(self.jail.code)])
        return self

    def _hold_ledger(self) -> None:
        """A shared lock on the ledger for the run: another run's append (exclusive) waits, so it cannot look forged."""
        try:
            self._ledger_lock = os.open(paths.ledger_file(), os.O_RDONLY)
            fcntl.flock(self._ledger_lock, fcntl.LOCK_SH)
        except OSError:
            self._ledger_lock = None

    def problems(self) -> list[str]:
        """After the run: kill what it left running, check and restore the trusted files; one line per problem."""
        self._checked, found = True, []
        left = procs.kill_all_below(os.getpid(), self._spared) if self.protection.kind != "off" else {}
        if left:
            pid, command = next(iter(left.items()))
            found.append(f"left {len(left)} process(es) running after the run (killed), first {pid}: {command[:80]}")
        if self.snapshot is not None:
            changes = self.snapshot.changes()
            unrestored = self.snapshot.restore(changes, self.aside)
            # Bytecode is a cache: a changed or new .pyc is removed (the parent may have written it) and not reported.
            changes = [change for change in changes if "__pycache__" not in change.path.parts]
            changes.sort(key=lambda change: self._private(change.path))  # the checkout's own files first
            found += [f"tampered with {self._shown(change.path)} on disk ({change.what}; put back as it was before "
                      f"the run, the run's version kept in {paths.shown(self.aside)})" for change in changes]
            found += unrestored
        return found

    def _private(self, path: Path) -> bool:
        return self.jail is not None and self.jail.code is not None and path.is_relative_to(self.jail.code)

    def _shown(self, path: Path) -> str:
        if self._private(path):
            return f"{path.relative_to(self.jail.code)} (the run's private copy)"
        return paths.in_repository(path)

    def __exit__(self, *exc):
        if not self._checked and self.protection.kind != "off":  # interrupted: still end its processes, put files back
            self.problems()
        if self._ledger_lock is not None:
            os.close(self._ledger_lock)
            self._ledger_lock = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
        return False
