"""A long launch's sign of life on stderr: a line as each wave of workgroups finishes (256, one
per MI355X compute unit), at most one each few seconds, none for a launch of a few seconds.

Inside a harness worker the same line also goes to whoever `relay_to` names: the child sends it
to the parent over its private pipe, and the parent prints it on the terminal
(harness/run/child.py, worker.py)."""
import os
import sys
import time

WAVE_OF_WORKGROUPS = 256  # MI355X's compute units: the workgroups one dispatch wave holds
QUIET_S = 5.0             # a launch shorter than this prints nothing
EVERY_S = 2.0             # at most one line this often
# Both in seconds, from the environment when set (tests make them tiny to see a line at once).
QUIET_ENV = "HARNESS_PROGRESS_QUIET_S"
EVERY_ENV = "HARNESS_PROGRESS_EVERY_S"

_relay = None  # callable(line), or None: where each line goes besides the stream


def relay_to(callback) -> None:
    """Every later line is also passed to callback(line); None stops it."""
    global _relay
    _relay = callback


def _seconds(name: str, default: float) -> float:
    try:
        return max(0.0, float(os.environ.get(name, default)))
    except ValueError:
        return default


class Progress:
    def __init__(self, kernel: str, total: int, path: str, stream=None):
        self.kernel, self.total, self.path = kernel, total, path
        self.stream = stream or sys.stderr
        self.quiet_s = _seconds(QUIET_ENV, QUIET_S)
        self.every_s = _seconds(EVERY_ENV, EVERY_S)
        self.started = self.said = time.monotonic()
        self.done = 0
        self.instructions = 0
        self.next_wave = WAVE_OF_WORKGROUPS

    def finished(self, group) -> None:
        self.done += 1
        self.instructions += group.executed
        now = time.monotonic()
        if now - self.started < self.quiet_s or now - self.said < self.every_s:
            return
        if self.done >= self.next_wave or self.done == self.total or now - self.said > 10 * self.every_s:
            self.said = now
            self.next_wave = (self.done // WAVE_OF_WORKGROUPS + 1) * WAVE_OF_WORKGROUPS
            self.say(self.line(now))

    def line(self, now: float) -> str:
        rate = self.instructions / max(now - self.started, 1e-9)
        return (f"gfx950 emulated (CPU): {self.kernel}: {self.done}/{self.total} workgroups, "
                f"{self.instructions:,} wave instructions, {now - self.started:.0f} s "
                f"({rate:,.0f}/s, {self.path})")

    def say(self, line: str) -> None:
        say(line, self.stream)


def say(line: str, stream=None) -> None:
    """One line on stderr (the worker's log) and to whoever relay_to names (the user's terminal)."""
    print(line, file=stream or sys.stderr, flush=True)
    if _relay is not None:
        _relay(line)
