"""The fallback's file checks: a snapshot of every file the parent trusts, taken before a run, checked after it.

A changed, deleted or new file is put back from the snapshot (never from git: uncommitted edits survive), and
the version the run left is kept aside for a look. Files are compared by SHA-256; the few large cache files
(precompiled headers, ~150 MB each) by inode change time instead, which every write moves and no unprivileged
process can set back, and one that changed is removed, so its builder makes it afresh.
"""
import dataclasses
import hashlib
import os
import shutil
from pathlib import Path

CONTENT_LIMIT = 8 << 20  # files up to this size are kept in memory, byte for byte


@dataclasses.dataclass(frozen=True)
class Kept:
    """One file as it was: its bytes (None for a large file) and digest, or its identity for a large one."""
    mode: int
    digest: str | None
    content: bytes | None
    identity: tuple | None  # (inode, size, mtime_ns, ctime_ns) of a large file


@dataclasses.dataclass(frozen=True)
class Change:
    path: Path
    what: str  # "changed" | "deleted" | "created"


def _identity(stat: os.stat_result) -> tuple:
    return stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


def _keep(path: Path) -> Kept | None:
    try:
        stat = path.lstat()
        if not path.is_file() or path.is_symlink():
            return None
        if stat.st_size > CONTENT_LIMIT:
            return Kept(stat.st_mode, None, None, _identity(stat))
        content = path.read_bytes()
    except OSError:
        return None
    return Kept(stat.st_mode, hashlib.sha256(content).hexdigest(), content, None)


def _same(path: Path, kept: Kept) -> bool:
    try:
        if kept.identity is not None:
            return _identity(path.lstat()) == kept.identity
        if path.is_symlink() or not path.is_file():
            return False
        with open(path, "rb") as file:
            return hashlib.file_digest(file, "sha256").hexdigest() == kept.digest
    except OSError:
        return False


class Snapshot:
    """The trusted files of `listers` (callables returning paths) as they were when taken."""

    def __init__(self, listers):
        self.listers = list(listers)
        self.kept: dict[Path, Kept] = {}
        for path in self._listed():
            kept = _keep(path)
            if kept is not None:
                self.kept[path] = kept

    def _listed(self) -> set[Path]:
        return {Path(path) for lister in self.listers for path in lister()}

    def changes(self) -> list[Change]:
        found = [Change(path, "deleted" if not path.exists() else "changed")
                 for path, kept in self.kept.items() if not _same(path, kept)]
        found += [Change(path, "created") for path in self._listed() - set(self.kept) if path.is_file()]
        return sorted(found, key=lambda change: str(change.path))

    def restore(self, changes: list[Change], aside: Path) -> list[str]:
        """Put each changed file back as it was (keeping what the run left under `aside`); lines for what could not."""
        problems = []
        for change in changes:
            try:
                if change.path.exists() or change.path.is_symlink():
                    target = aside / change.path.relative_to(change.path.anchor)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(change.path), target)
                kept = self.kept.get(change.path)
                if kept is not None and kept.content is not None:
                    change.path.parent.mkdir(parents=True, exist_ok=True)
                    change.path.write_bytes(kept.content)
                    os.chmod(change.path, kept.mode & 0o7777)
            except OSError as error:
                problems.append(f"could not restore {change.path}: {error.strerror or error}")
        return problems


def tree(folder: Path):
    """A lister for every file below `folder` (new files in it count as changes)."""
    def files():
        return [Path(root) / name for root, _, names in os.walk(folder) for name in names]
    return files


def fixed(paths: list[Path]):
    """A lister for a fixed set of files (one that appears later counts as created)."""
    return lambda: list(paths)
