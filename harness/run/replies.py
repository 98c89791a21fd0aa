"""The child's private pipe to the parent (harness/run/child.py writes, worker.py reads): JSON lines,
the replies and, while a request runs, the gfx950 emulator's progress lines of that request."""
import json
import os
import threading


class ReplyPipe:
    """Replies, and the progress lines of the request under way (they carry its nonce)."""

    def __init__(self, fd: int):
        self.file = os.fdopen(fd, "w")
        self.nonce = None  # the request under way; None between requests, when no line is sent
        self.lock = threading.Lock()  # a launch from a submission's thread must not split a line

    def send(self, message: dict) -> None:
        with self.lock:
            self.file.write(json.dumps(message) + "\n")
            self.file.flush()

    def progress(self, line: str) -> None:
        """One progress line: {"progress": line, "nonce": ...}, which worker.PROGRESS_PREFIX recognises."""
        if self.nonce is not None:
            self.send({"progress": line, "nonce": self.nonce})
