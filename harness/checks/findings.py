"""What a static check reports, and the server's limits every check shares."""
from dataclasses import dataclass

MAX_BYTES = 1_000_000  # the server answers 413 above this
FORBIDDEN_WORD = "stream"  # the server rejects any file containing it, case-insensitive, comments included


@dataclass(frozen=True)
class Finding:
    rule: str
    line: int
    message: str
    blocking: bool  # the server (or its KernelGuard) would refuse the file

    def format(self, path: str) -> str:
        """`path:line: RULE_NAME error|warning: message`."""
        severity = "error" if self.blocking else "warning"
        return f"{path}:{self.line}: {self.rule} {severity}: {self.message}"
