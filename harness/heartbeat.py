"""A piped run's sign of life: one line every so often while a step (a case) runs on.

On a terminal the progress bar's clock says it; piped, a file hanging under the
default 900 s limit would otherwise print nothing for 15 minutes.
"""
import threading
import time

HEARTBEAT_S = 30.0  # the first line after this long, then one each this long


class Heartbeat:
    """say(line) every `every_s` while a step is under way: '120: case 2/3 still running, 60 s (limit 900 s)'."""

    def __init__(self, name: str, say, every_s: float = HEARTBEAT_S, limit_s: float | None = None):
        self.name, self.say, self.every_s, self.limit_s = name, say, every_s, limit_s
        self.current = None  # (what, when it began): the step under way, None between steps
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat {name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def began(self, what: str) -> None:
        self.current = (what, time.monotonic())

    def ended(self) -> None:
        self.current = None

    def line(self, what: str, seconds: float) -> str:
        limit = f" (limit {self.limit_s:.0f} s)" if self.limit_s else ""
        return f"{self.name}: {what} still running, {seconds:.0f} s{limit}"

    def _beat(self) -> None:
        said = time.monotonic()
        while not self._stopped.wait(min(1.0, self.every_s)):
            current, now = self.current, time.monotonic()
            if current is None or now - max(said, current[1]) < self.every_s:
                continue
            said = now
            self.say(self.line(current[0], now - current[1]))
