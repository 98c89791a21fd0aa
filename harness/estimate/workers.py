"""The estimate's shapes recorded several at once: on a CPU, where a recorded call runs on the
gfx950 emulator or Triton's interpreter and takes one core, one worker a core (at most
MAX_WORKERS); on a GPU one. Each worker takes the next shape in order; after a failure none
starts another, and results come back in shape order, so the first failure is the one reported
whatever finished first. Ctrl-C kills every worker's child at once (each leads its own session).
"""
from __future__ import annotations

import os
import threading

MAX_WORKERS = 4  # an emulated worker holds ~1 GB
ENV = "HARNESS_ESTIMATE_WORKERS"  # a number: at most that many at once


def how_many(shapes: int, on_gpu: bool) -> int:
    """Workers to record `shapes` shapes with; $HARNESS_ESTIMATE_WORKERS lowers it."""
    cores = 1 if on_gpu else min(MAX_WORKERS, os.cpu_count() or 1)
    chosen = os.environ.get(ENV, "")
    if chosen.isdigit() and int(chosen) > 0:
        cores = min(cores, int(chosen))
    return max(1, min(cores, shapes))


def share_cores(env: dict, workers: int) -> None:
    """A worker's torch threads: the cores split between the workers (unless OMP_NUM_THREADS is
    set), so that no thread waits descheduled behind another worker's at every op."""
    if workers > 1 and "OMP_NUM_THREADS" not in os.environ:
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // workers))


def same_calls(keys: list, workers: int) -> list[list[int]]:
    """The shapes (by index) grouped by the calls they make: keys (batch, KV lengths recorded) that
    are equal make the same calls, recorded once. With several workers the costliest group (batch x
    rows) comes first, so that no worker is left alone with it at the end; else shape order."""
    groups: dict = {}
    for index, key in enumerate(keys):
        groups.setdefault(key, []).append(index)
    order = list(groups)
    if workers > 1:
        order.sort(key=lambda key: -key[0] * sum(key[1]))
    return [groups[key] for key in order]


def each_shape(labels: list, workers: int, start_worker, record, progress=None) -> list:
    """[record(worker, index) for each shape], `workers` at a time. start_worker(slot) makes a
    worker (a context manager); record returns a tuple whose last item is a failure ("" if none);
    progress(done, total, label of the shapes in flight). A shape never started is None."""
    found: list = [None] * len(labels)
    lock, failed = threading.Lock(), threading.Event()
    queue, running, live, errors = iter(range(len(labels))), [], [], []

    def take() -> int | None:
        with lock:
            index = None if failed.is_set() else next(queue, None)
            if index is not None:
                running.append(index)
                if progress:
                    done = sum(item is not None for item in found)
                    progress(done, len(labels), " and ".join(labels[k] for k in sorted(running)))
            return index

    def work(slot: int) -> None:
        try:
            with start_worker(slot) as worker:
                live.append(worker)
                while (index := take()) is not None:
                    found[index] = record(worker, index)
                    with lock:
                        running.remove(index)
                    if found[index][-1]:
                        failed.set()
        except BaseException as error:  # noqa: BLE001 - raised in the caller's thread
            errors.append(error)
            failed.set()

    threads = [threading.Thread(target=work, args=(slot,), name=f"estimate worker {slot + 1}", daemon=True)
               for slot in range(workers)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)  # back to Python often: Ctrl-C is seen only there
    except KeyboardInterrupt:
        failed.set()
        for worker in live:
            worker.interrupt()
        for thread in threads:
            thread.join(timeout=30)
        raise
    if errors:
        raise errors[0]
    return found
