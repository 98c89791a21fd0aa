"""Submissions: find the numbered files, resolve a user's argument, read what each one needs.

A submission is `submissions/NNN_slug.py`; NNN orders history. What a file needs is read from its
own text (DESIGN section 5), never from a setting the user must keep in sync:
  torch   always
  triton  it imports triton
  aiter   it imports AMD's aiter
  hip     it compiles HIP source (torch.utils.cpp_extension load_inline / load with HIP markers,
          or it sets PYTORCH_ROCM_ARCH)
"""
import dataclasses
import hashlib
import re
from pathlib import Path

from harness.paths import SUBMISSIONS_DIR, in_repository

FILE_NAME = re.compile(r"^(\d+)_(\w+)\.py$")

_IMPORTS_AITER = re.compile(r"^\s*(?:from\s+aiter(?:\.\w+)*\s+import\b|import\s+aiter\b)", re.MULTILINE)
_IMPORTS_TRITON = re.compile(r"^\s*(?:from\s+triton(?:\.\w+)*\s+import\b|import\s+triton\b)", re.MULTILINE)
_COMPILES_EXTENSION = re.compile(r"\bload_inline\b|cpp_extension")
# Text that only HIP source (or a ROCm build setting) contains.
_HIP_MARKERS = re.compile(
    r"hip/hip_runtime|#\s*include\s*<hip/|__builtin_amdgcn_|__HIP_PLATFORM_AMD__|\bhipLaunchKernel|"
    r"--offload-arch|\bamdgcn\b"
)
_ROCM_ARCH_SETTING = re.compile(r"PYTORCH_ROCM_ARCH")
_GFX_TARGET = re.compile(r"\bgfx\d{3}[a-z0-9]*\b")


class SubmissionError(ValueError):
    """A submission argument that names no usable file (message is one line for the user)."""


@dataclasses.dataclass(frozen=True)
class Submission:
    number: int | None
    slug: str
    path: Path
    requirements: frozenset
    sha256: str
    hip_archs: frozenset = frozenset()  # gfx targets named by HIP source, e.g. {"gfx950"}; empty = unknown

    @property
    def numbered(self) -> bool:
        """One of the repository's submissions/NNN_slug.py (an outside file keeps its own identity)."""
        return self.number is not None

    @property
    def label(self) -> str:
        """'120_hip_fp8_mfma' for a numbered file, else the file name."""
        return self.path.stem

    def display_path(self) -> str:
        """The path relative to the repository when the file is inside it."""
        return in_repository(self.path)


def requirements_of(source_text: str) -> frozenset:
    """What a submission needs, read from its text: a subset of {"torch", "triton", "hip", "aiter"}."""
    needs = {"torch"}
    if _IMPORTS_TRITON.search(source_text):
        needs.add("triton")
    if _IMPORTS_AITER.search(source_text):
        needs.add("aiter")
    compiles_hip = _COMPILES_EXTENSION.search(source_text) and _HIP_MARKERS.search(source_text)
    if compiles_hip or _ROCM_ARCH_SETTING.search(source_text):
        needs.add("hip")
    return frozenset(needs)


def hip_archs_of(source_text: str) -> frozenset:
    """The gfx targets HIP source is built for (from --offload-arch / PYTORCH_ROCM_ARCH text); empty if unnamed."""
    if "hip" not in requirements_of(source_text):
        return frozenset()
    return frozenset(_GFX_TARGET.findall(source_text))


def from_path(path: str | Path, submissions_dir: str | Path = SUBMISSIONS_DIR) -> Submission:
    """A Submission for any readable .py file; an NNN_slug.py inside submissions/ gets its number, any other
    file none (a leading number elsewhere means nothing: it must not take over a numbered submission's results)."""
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise SubmissionError(f"no such submission file: {path}")
    if path.suffix != ".py":
        raise SubmissionError(f"not a Python file: {path}")
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SubmissionError(f"cannot read {path}: {exc}") from None
    match = FILE_NAME.match(path.name)
    inside = path.parent == Path(submissions_dir).resolve()
    number, slug = (int(match[1]), match[2]) if match and inside else (None, path.stem)
    return Submission(
        number=number,
        slug=slug,
        path=path,
        requirements=requirements_of(text),
        sha256=hashlib.sha256(raw).hexdigest(),
        hip_archs=hip_archs_of(text),
    )


def discover(root: str | Path = SUBMISSIONS_DIR) -> list[Submission]:
    """Every NNN_slug.py under root, ordered by number."""
    root = Path(root)
    if not root.is_dir():
        return []
    files = [p for p in root.iterdir() if p.is_file() and FILE_NAME.match(p.name)]
    found = [from_path(p, root) for p in files]
    return sorted(found, key=lambda s: (s.number, s.slug))


def resolve(arg: str, root: str | Path = SUBMISSIONS_DIR) -> Submission:
    """A number ("120" -> submissions/120_*.py) or a path to any submission file."""
    text = str(arg).strip()
    if text.isdigit():
        number = int(text)
        matches = [s for s in discover(root) if s.number == number]
        if not matches:
            raise SubmissionError(f"no submission numbered {number} in {root}")
        if len(matches) > 1:
            names = ", ".join(s.path.name for s in matches)
            raise SubmissionError(f"submission number {number} is ambiguous: {names}")
        return matches[0]
    return from_path(text)
