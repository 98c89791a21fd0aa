"""The estimate's shapes recorded several at once (harness/estimate/workers.py): results in shape
order, workers overlapping, a failure stopping new shapes, errors raised, and Ctrl-C killing the
workers' children (Worker.interrupt, on a real worker whose submission hangs)."""
import _thread
import contextlib
import threading
import time
from pathlib import Path

import pytest

from harness.estimate import workers
from harness.run.worker import Worker

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
HANG = {"batchsize": 3, "qseqlen": 1, "kvseqlen": 16, "seed": 1}  # crash_and_hang.py sleeps an hour


class FakeWorker:
    def __init__(self, slot):
        self.slot, self.interrupted = slot, threading.Event()

    def interrupt(self):
        self.interrupted.set()


def fake_start(made):
    @contextlib.contextmanager
    def start(slot):
        made.append(FakeWorker(slot))
        yield made[-1]
    return start


def test_shapes_come_back_in_order_from_workers_that_overlap():
    both_in = threading.Barrier(2, timeout=10)  # two records at once, or the barrier breaks
    made, said = [], []

    def record(worker, index):
        if index < 2:
            both_in.wait()
        time.sleep(0.01 * (5 - index))  # later shapes finish first
        return (index, worker.slot, "")
    found = workers.each_shape([f"s{k}" for k in range(5)], 2, fake_start(made), record,
                               lambda done, total, label: said.append((done, total, label)))
    assert [item[0] for item in found] == [0, 1, 2, 3, 4]
    assert {item[1] for item in found} == {0, 1} and len(made) == 2
    assert said[0] == (0, 5, "s0") and any(" and " in label for _, _, label in said)
    assert all(total == 5 for _, total, _ in said)


def test_after_a_failure_no_shape_starts():
    def record(worker, index):
        return (index, "it broke" if index == 1 else "")
    found = workers.each_shape(["a", "b", "c", "d"], 1, fake_start([]), record)
    assert found == [(0, ""), (1, "it broke"), None, None]


def test_an_error_in_a_worker_is_raised_in_the_caller():
    def record(worker, index):
        raise RuntimeError(f"shape {index}")
    with pytest.raises(RuntimeError, match="shape 0"):
        workers.each_shape(["a"], 1, fake_start([]), record)


def test_ctrl_c_interrupts_every_worker():
    made = []

    def record(worker, index):
        assert worker.interrupted.wait(10), "never interrupted"
        return (index, "killed")
    threading.Timer(0.3, _thread.interrupt_main).start()  # Ctrl-C's KeyboardInterrupt, in the main thread
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        workers.each_shape(["a", "b"], 2, fake_start(made), record)
    assert len(made) == 2 and all(w.interrupted.is_set() for w in made)
    assert time.monotonic() - began < 5  # not after the records gave up waiting


def test_how_many_follows_the_cores_the_device_and_the_setting(monkeypatch):
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 16)
    monkeypatch.delenv(workers.ENV, raising=False)
    assert workers.how_many(8, on_gpu=False) == workers.MAX_WORKERS
    assert workers.how_many(1, on_gpu=False) == 1 and workers.how_many(8, on_gpu=True) == 1
    monkeypatch.setenv(workers.ENV, "2")
    assert workers.how_many(8, on_gpu=False) == 2
    monkeypatch.setenv(workers.ENV, "many")  # not a number: the default
    assert workers.how_many(8, on_gpu=False) == workers.MAX_WORKERS


def test_interrupt_ends_a_real_workers_hanging_call_at_once(tmp_path):
    with Worker(SAMPLES / "crash_and_hang.py", "cpu", tmp_path / "log") as worker:
        assert worker.call("test", 120, args=dict(HANG, batchsize=4), device="cpu")["ok"]  # started
        threading.Timer(1.0, worker.interrupt).start()
        began = time.monotonic()
        reply = worker.call("test", 120, args=HANG, device="cpu")
    assert not reply["ok"] and time.monotonic() - began < 30


def test_each_worker_gets_its_share_of_the_cores(monkeypatch):
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 8)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    env = {}
    workers.share_cores(env, 4)
    assert env == {"OMP_NUM_THREADS": "2"}
    alone = {}
    workers.share_cores(alone, 1)  # one worker: torch's own choice
    assert alone == {}
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the user's setting stands
    workers.share_cores(alone, 4)
    assert alone == {}


def test_shapes_that_make_the_same_calls_are_recorded_once_the_costliest_first():
    keys = [(4, (1024,)), (4, (512, 1024)), (32, (64, 128)), (32, (64, 128)), (256, (32, 64)), (256, (32, 64))]
    # 256 x 96 rows, then 4 x 1536 and 32 x 192 (a tie: shape order), then 4 x 1024
    assert workers.same_calls(keys, 2) == [[4, 5], [1], [2, 3], [0]]
    assert workers.same_calls(keys, 1) == [[0], [1], [2, 3], [4, 5]]  # one worker: shape order
    assert workers.same_calls([(4, (8,)), (4, (16,))], 2) == [[1], [0]]  # a length apart: calls apart
