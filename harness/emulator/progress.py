"""A long launch's sign of life on stderr: a line as each wave of workgroups finishes (256, one
per MI355X compute unit), at most one each few seconds, none for a launch of a few seconds."""
import sys
import time

WAVE_OF_WORKGROUPS = 256  # MI355X's compute units: the workgroups one dispatch wave holds
QUIET_S = 5.0             # a launch shorter than this prints nothing
EVERY_S = 2.0             # at most one line this often


class Progress:
    def __init__(self, kernel: str, total: int, path: str, stream=None):
        self.kernel, self.total, self.path = kernel, total, path
        self.stream = stream or sys.stderr
        self.started = self.said = time.monotonic()
        self.done = 0
        self.instructions = 0
        self.next_wave = WAVE_OF_WORKGROUPS

    def finished(self, group) -> None:
        self.done += 1
        self.instructions += group.executed
        now = time.monotonic()
        if now - self.started < QUIET_S or now - self.said < EVERY_S:
            return
        if self.done >= self.next_wave or self.done == self.total or now - self.said > 10 * EVERY_S:
            self.said = now
            self.next_wave = (self.done // WAVE_OF_WORKGROUPS + 1) * WAVE_OF_WORKGROUPS
            rate = self.instructions / max(now - self.started, 1e-9)
            print(f"gfx950 emulated (CPU): {self.kernel}: {self.done}/{self.total} workgroups, "
                  f"{self.instructions:,} wave instructions, {now - self.started:.0f} s "
                  f"({rate:,.0f}/s, {self.path})", file=self.stream, flush=True)
