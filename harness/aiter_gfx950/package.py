"""The pinned amd-aiter wheel, kept as data: its gfx950 MLA code objects and its C++/HIP sources.

The wheel is never installed into the venv: `import aiter` would then
find the real package (whose import wants ROCm and its JIT build) and
shadow the stand-in. `python -m harness.aiter_gfx950.package setup`
(a `make setup` prerequisite) downloads the pinned wheel with pip,
checks its sha256 and unpacks only KEPT under
~/.cache/amd-mixed-mla/amd-aiter/<version>/. Idempotent; it never
fails set-up, it says what it could not do.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import pwd
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

DATA = Path(__file__).resolve().parent / "code_objects.json"
# What we read: the code objects, the sources build.py compiles (with the
# composable_kernel headers they include), and attention.py, whose sizes
# tests/test_aiter_gfx950_metadata.py checks ours against.
KEPT = ("aiter_meta/hsa/gfx950/mla/", "aiter_meta/csrc/",
        "aiter_meta/3rdparty/composable_kernel/include/",
        "aiter_meta/3rdparty/composable_kernel/library/include/",
        "aiter/ops/attention.py")
HOW_TO_GET = "run `make setup` (it unpacks the pinned amd-aiter wheel's code objects into the cache)"


class PackageMissing(RuntimeError):
    """The unpacked wheel is not there; the message says how to get it."""


@functools.cache  # read on every aiter call (routing.mode), never written at run time
def pinned() -> dict:
    """code_objects.json: the wheel's name, version and sha256, and every code object we use."""
    return json.loads(DATA.read_text(encoding="utf-8"))


def version() -> str:
    return pinned()["package"]["version"]


def cache_root() -> Path:
    """$HARNESS_AITER_CACHE, else $XDG_CACHE_HOME (or ~/.cache)/amd-mixed-mla/amd-aiter/<version>; a run's
    child has its own XDG_CACHE_HOME, so the user's home cache is looked at too (the first unpacked wins)."""
    if os.environ.get("HARNESS_AITER_CACHE"):
        return Path(os.environ["HARNESS_AITER_CACHE"])
    bases = [os.environ.get("XDG_CACHE_HOME"), str(Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache")]
    roots = [Path(base) / "amd-mixed-mla" / "amd-aiter" / version() for base in bases if base]
    return next((root for root in roots if _complete(root)), roots[0])


def _marker(root: Path) -> Path:
    return root / ".complete"


def _stamp() -> str:
    """The marker's text: the wheel and what was kept (a changed KEPT unpacks again)."""
    return pinned()["package"]["wheel_sha256"] + "\n" + "\n".join(KEPT) + "\n"


def _complete(root: Path) -> bool:
    marker = _marker(root)
    return marker.is_file() and marker.read_text(encoding="utf-8") == _stamp()


def missing() -> str | None:
    """Why the unpacked wheel cannot be used here, or None."""
    if not _complete(cache_root()):
        return f"amd-aiter {version()} is not unpacked in {cache_root()}: {HOW_TO_GET}"
    return None


def code_object_path(name: str) -> Path:
    """The unpacked `<name>.co` (hsa/gfx950/mla/), checked against its pinned sha256."""
    problem = missing()
    if problem:
        raise PackageMissing(problem)
    entry = pinned()["code_objects"][name]
    path = cache_root() / entry["package"]["path"]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != entry["package"]["sha256"]:
        raise PackageMissing(f"{path} has sha256 {digest}, the pinned wheel's is "
                             f"{entry['package']['sha256']}: {HOW_TO_GET}")
    return path


def source_path(relative: str) -> Path:
    """A file of the wheel's aiter_meta/csrc/ (e.g. 'kernels/mla/metadata.cu')."""
    problem = missing()
    if problem:
        raise PackageMissing(problem)
    return cache_root() / "aiter_meta" / "csrc" / relative


def _download(folder: str, say) -> tuple[Path | None, str | None]:
    """pip download of the pinned wheel into folder: (its path, None) or (None, why not)."""
    package = pinned()["package"]
    requirement = f"{package['name']}=={package['version']}"
    say(f"pip download --no-deps {requirement} ({package['wheel']}, about 40 MB; kept: code objects, sources, CK headers)")
    result = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                             "--only-binary", ":all:", requirement, "-d", folder],
                            capture_output=True, text=True)
    wheel = Path(folder) / package["wheel"]
    if result.returncode != 0 or not wheel.is_file():
        last = (result.stderr.strip().splitlines() or ["no wheel"])[-1]
        return None, f"pip download {requirement} failed ({last})"
    return wheel, None


def _unpack(wheel: Path, root: Path) -> str | None:
    """Check the wheel's sha256, then write KEPT under root; returns why not, or None."""
    expected = pinned()["package"]["wheel_sha256"]
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != expected:
        return f"{wheel.name} has sha256 {digest}, the pin says {expected}: not unpacked"
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.endswith("/") or not member.startswith(KEPT):
                continue
            target = root / member
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(member))
    return None


def setup(say=print, wheel: Path | None = None) -> list[str]:
    """Unpack the pinned wheel (downloaded unless given); returns what could not be done."""
    root = cache_root()
    if _complete(root):
        return []
    with tempfile.TemporaryDirectory() as folder:
        problem = None
        if wheel is None:
            wheel, problem = _download(folder, say)
        problem = problem or _unpack(wheel, root)
        if problem:
            return [problem]
    _marker(root).write_text(_stamp(), encoding="utf-8")
    return []


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "status"
    if command == "setup":
        try:
            problems = setup(lambda line: print(f"[amd-aiter] {line}", flush=True))
        except Exception as error:  # set-up goes on; aiter calls fall back to the torch stand-in and say so
            problems = [f"set-up stopped: {type(error).__name__}: {error}"]
        for line in problems:
            print(f"[amd-aiter] MISSING: {line} (aiter calls stay on the torch stand-in)", flush=True)
        if not problems:
            print(f"[amd-aiter] {version()} ready in {cache_root()}")
        return 1 if problems and "--strict" in argv else 0
    if command == "status":
        problem = missing()
        print(problem or f"amd-aiter {version()} unpacked in {cache_root()}")
        return 1 if problem else 0
    print("usage: python -m harness.aiter_gfx950.package setup|status", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
