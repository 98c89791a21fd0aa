"""The call journal: one dict per covered aiter call, for the estimate (harness estimate) and for tests.

Entry keys (the interface the estimate builds on): api, kernel, variant ("a8w8" | "a16w8" | "a16w16" | None),
persistent, q_dtype, kv_dtype, page_size, num_kv_splits, batch, total_q, total_kv (int or None), bytes_read,
bytes_written, launches (GPU kernels the runner would launch for this call), warning (a known risk of the
runner's kernel for this call, harness/aiter_standin/risks.py; None when there is none).
"""
import contextlib
import threading

KEYS = ("api", "kernel", "variant", "persistent", "q_dtype", "kv_dtype", "page_size", "num_kv_splits", "batch",
        "total_q", "total_kv", "bytes_read", "bytes_written", "launches", "warning")
_active: list[list] = []
_lock = threading.Lock()


@contextlib.contextmanager
def recording():
    """Collect every covered call made inside the block into the yielded list (recordings may nest)."""
    calls: list = []
    with _lock:
        _active.append(calls)
    try:
        yield calls
    finally:
        with _lock:
            _active.remove(calls)


def entry(api: str, kernel: str, *, launches: int = 1, bytes_read: int = 0, bytes_written: int = 0, **fields) -> dict:
    """A complete journal entry: every key present, the ones a call does not know set to None."""
    unknown = set(fields) - set(KEYS)
    if unknown:
        raise KeyError(f"not journal keys: {sorted(unknown)}")
    found = {key: None for key in KEYS}
    found.update(fields, api=api, kernel=kernel, launches=int(launches), bytes_read=int(bytes_read),
                 bytes_written=int(bytes_written))
    return found


def note(call: dict) -> None:
    """Append one call to each active recording (nothing happens when none is active)."""
    with _lock:
        for calls in _active:
            calls.append(dict(call))


def dtype_name(dtype) -> str | None:
    """'float8_e4m3fn' for torch.float8_e4m3fn (None for None), the form the journal keeps."""
    return None if dtype is None else str(dtype).removeprefix("torch.")


def tensor_bytes(*tensors) -> int:
    """Bytes held by the given tensors (None counted as 0)."""
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)
