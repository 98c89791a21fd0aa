"""Ctrl-C that Python drops (raised while a finalizer runs) still stops a run waiting on a hanging submission."""
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from harness import interrupts
from harness.run.worker import Worker

SAMPLES = Path(__file__).parent / "samples"
HANGS = {"batchsize": 3, "qseqlen": 1, "kvseqlen": 16, "seed": 1}  # crash_and_hang.py sleeps an hour on batch 3


class SlowFinalizer:
    """A finalizer that is running when the SIGINT comes: Python drops the KeyboardInterrupt raised in it."""

    def __del__(self):
        time.sleep(0.5)


def press_ctrl_c_during_a_finalizer() -> None:
    threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
    SlowFinalizer()  # deleted at once: its __del__ sleeps while the signal arrives


# The dropped KeyboardInterrupt is what Python reports as "Exception ignored" (pytest: an unraisable exception).
dropped = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@dropped
def test_a_dropped_ctrl_c_is_raised_again():
    with interrupts.remembered():
        press_ctrl_c_during_a_finalizer()
        time.sleep(0.2)  # reached: Python dropped the KeyboardInterrupt raised in the finalizer
        with pytest.raises(KeyboardInterrupt):
            interrupts.raise_if_pressed()
    interrupts.raise_if_pressed()  # the note ends with the block


@dropped
def test_a_dropped_ctrl_c_stops_a_call_waiting_on_a_hanging_submission(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with Worker(SAMPLES / "crash_and_hang.py", "cpu", tmp_path / "worker.log") as worker, interrupts.remembered():
            assert worker.call("test", 60, args={**HANGS, "batchsize": 1}, device="cpu")["ok"]  # started
            press_ctrl_c_during_a_finalizer()  # dropped just before the wait, as between two cases
            started = time.monotonic()
            worker.call("test", 20, args=HANGS, device="cpu")
    assert time.monotonic() - started < 5  # within a check's 0.25 s of the press, not the call's 20 s
