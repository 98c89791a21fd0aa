"""Timing one call the way the official eval.py does: synchronize, flush, events around the call.

The official statistics and stopping rule live in run/stats.py (the parent reads them without torch).
"""
import dataclasses
import functools
import math
import time
from typing import Callable

import torch

FLUSH_MODES = ("fast", "official", "none")

# The official flush (utils.clear_l2_cache_large): a 16000 x 1024 x 1024 float32 randn, 64 GiB.
OFFICIAL_FLUSH_SHAPE = (16000, 1024, 1024)

# Last-level cache per arch where torch does not report the right one (MI355X/MI300X: 256 MB Infinity Cache).
LAST_LEVEL_CACHE_BYTES = {"gfx950": 256 << 20, "gfx942": 256 << 20}
FAST_FLUSH_CACHE_MULTIPLE = 4  # write 4x the last-level cache so nothing of the previous call survives

# After the fast flush the GPU sleeps this long. The official 64 GiB randn keeps the GPU busy for ~20 ms,
# during which the host enqueues the submission's launches, so events time GPU work only. A 1 GiB write
# lasts ~0.3 ms, too short for host-heavy submissions; 3 ms of sleep hides host-side work up to ~3 ms
# (a couple of ms of Python and launch overhead) while costing only 3 s over 1000 timed calls.
FAST_FLUSH_SLEEP_MS = 3.0

def synchronize(device: str) -> None:
    if device != "cpu":
        torch.cuda.synchronize()


def flush_last_level_cache(mode: str) -> None:
    """Evict the previous call's data from the GPU's last-level cache ("none" on the CPU)."""
    if mode == "none":
        return
    if mode == "official":
        dummy = torch.randn(OFFICIAL_FLUSH_SHAPE, device="cuda")
        del dummy
        return
    if mode == "fast":
        _fast_flush_buffer(torch.cuda.current_device()).zero_()
        torch.cuda._sleep(_sleep_cycles(torch.cuda.current_device(), FAST_FLUSH_SLEEP_MS))
        return
    raise ValueError(f"unknown flush mode {mode!r}: use one of {', '.join(FLUSH_MODES)}")


def official_flush_fits() -> bool:
    """Whether this GPU can hold the official flush's 64 GiB tensor (with room for the submission)."""
    flush_bytes = math.prod(OFFICIAL_FLUSH_SHAPE) * 4
    return torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory > 1.1 * flush_bytes


def last_level_cache_bytes(device_index: int) -> int:
    props = torch.cuda.get_device_properties(device_index)
    arch = getattr(props, "gcnArchName", "").split(":")[0]
    if arch in LAST_LEVEL_CACHE_BYTES:
        return LAST_LEVEL_CACHE_BYTES[arch]
    return int(getattr(props, "L2_cache_size", 0)) or (256 << 20)


@functools.cache
def _fast_flush_buffer(device_index: int) -> torch.Tensor:
    size = FAST_FLUSH_CACHE_MULTIPLE * last_level_cache_bytes(device_index)
    return torch.empty(size, dtype=torch.uint8, device=f"cuda:{device_index}")


@functools.cache
def _sleep_cycles(device_index: int, milliseconds: float) -> int:
    """torch.cuda._sleep counts GPU clock cycles; measure the clock once so the sleep lasts `milliseconds`."""
    probe_cycles = 2_000_000
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(2):  # the first round pays the kernel's load
        start.record()
        torch.cuda._sleep(probe_cycles)
        end.record()
        torch.cuda.synchronize()
    cycles_per_ms = probe_cycles / max(start.elapsed_time(end), 1e-3)
    return int(cycles_per_ms * milliseconds)


@dataclasses.dataclass(frozen=True)
class Clocks:
    """The primitives time_call times with. The worker passes the originals it took before importing a
    submission, so a submission that replaces torch.cuda.Event or time.perf_counter_ns cannot fool it."""
    perf_counter_ns: Callable = time.perf_counter_ns
    synchronize: Callable = torch.cuda.synchronize
    event: Callable = torch.cuda.Event
    record: Callable = torch.cuda.Event.record
    elapsed_time: Callable = torch.cuda.Event.elapsed_time
    flush: Callable = flush_last_level_cache


def time_call(fn, device: str, flush: str, clocks: Clocks = Clocks()):
    """(fn's result, duration in ns): device events around the call on a GPU, perf_counter_ns on the CPU."""
    if device == "cpu":
        start = clocks.perf_counter_ns()
        result = fn()
        return result, clocks.perf_counter_ns() - start
    clocks.synchronize()
    clocks.flush(flush)
    start_event, end_event = clocks.event(enable_timing=True), clocks.event(enable_timing=True)
    clocks.record(start_event)
    result = fn()
    clocks.record(end_event)
    clocks.synchronize()
    return result, clocks.elapsed_time(start_event, end_event) * 1e6
