"""`#!POPCORN key value` directives, read the two ways that matter.

popcorn-cli reads them from any line that starts (column 0) with `#` or `//`, a later line overriding
an earlier one; the server reads them only from the file's first comment block. checks/lint.py checks them,
remote/submit.py takes the leaderboard and GPU from them.
"""
import dataclasses

LEADERBOARD = "amd-mixed-mla"  # this project's leaderboard
GPU = "MI355X"                 # the GPU it is ranked on
PREFIXES = ("#!POPCORN", "//!POPCORN")
COMMENT_STARTS = ("#", "//")


@dataclasses.dataclass(frozen=True)
class Directive:
    line: int          # 1-based
    text: str          # the whole line, stripped
    key: str           # lower case; "gpus" is kept as written
    values: list       # the tokens after the key
    in_header: bool    # inside the first comment block, where the server reads it


@dataclasses.dataclass
class Directives:
    leaderboard: str | None
    gpus: list[str]


def header_length(lines: list[str]) -> int:
    """How many lines the first comment block has."""
    count = 0
    while count < len(lines) and lines[count].startswith(COMMENT_STARTS):
        count += 1
    return count


def parse(text: str) -> list[Directive]:
    """Every directive line of the file, in order."""
    lines = text.splitlines()
    header = header_length(lines)
    found = []
    for index, line in enumerate(lines):
        tokens = line.split()
        if not tokens or tokens[0] not in PREFIXES:
            continue
        key = tokens[1].lower() if len(tokens) > 1 else ""
        found.append(Directive(index + 1, line.strip(), key, tokens[2:], index < header))
    return found


def read_directives(text: str) -> Directives:
    """What popcorn-cli takes from the file: the last leaderboard and gpu lines at column 0."""
    leaderboard, gpus = None, []
    lines = text.splitlines()
    for directive in parse(text):
        if not lines[directive.line - 1].startswith(COMMENT_STARTS):
            continue  # indented: popcorn-cli does not see it
        if directive.key in ("gpu", "gpus"):
            gpus = directive.values
        elif directive.key == "leaderboard" and directive.values:
            leaderboard = directive.values[0]
    return Directives(leaderboard, gpus)


def header_leaderboard(text: str) -> str | None:
    """The leaderboard the server reads: only from the first comment block of the file."""
    for directive in parse(text):
        if directive.in_header and directive.key == "leaderboard" and directive.values:
            return directive.values[0]
    return None
