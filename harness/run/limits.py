"""Limits on a submission's worker process: how much it may write and, on the CPU, how much memory it may map.

Both sides read them: the parent (to warn about a bad setting) and the child (to apply them and to word
the failure when one is hit). Environment variables override the defaults; sizes like 512M, 8G or bytes.
"""
import os

MEMORY_LIMIT_ENV = "HARNESS_WORKER_MEMORY_LIMIT"  # address space of a CPU worker (GPU drivers map huge ranges)
OUTPUT_LIMIT_ENV = "HARNESS_WORKER_OUTPUT_LIMIT"  # largest file the child may write, its log included
DEFAULT_MEMORY_LIMIT = 16 << 30  # or half the machine's memory, whichever is smaller
DEFAULT_OUTPUT_LIMIT = 256 << 20  # room for compiler outputs (the limit covers every file the child writes)


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
