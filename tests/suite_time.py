"""The suite's time on the 2-core CI machine: the committed seconds of each test (tests/durations.json), the
longest work first for xdist, and which tests over SLOW_S lack the `slow` mark.

`make test` runs `--dist loadgroup`: a work unit is an xdist_group, or one test. Units handed out in file
order leave a long one for the end, with one worker idle beside it; longest first, the short ones fill in.
Tests of one ungrouped module stay together, so a module fixture is set up once per worker run of them.
`pytest --record-durations tests/durations.json` rewrites the file from a run (setup + call + teardown).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

DURATIONS_FILE = Path(__file__).parent / "durations.json"
SLOW_S = 10.0      # a test over this is marked slow: make test-fast leaves it out
UNKNOWN_S = 1.0    # a test the file does not name yet
# node id -> whether it is marked slow, for every test the session collected (conftest fills it)
SLOW_MARKS = pytest.StashKey[dict]()


def load(path: Path = DURATIONS_FILE) -> dict[str, float]:
    """Seconds per node id (without xdist's @group suffix); empty when there is no file."""
    if not path.is_file():
        return {}
    return json.loads(path.read_text())["seconds"]


def plain_id(nodeid: str) -> str:
    """The node id without the "@group" xdist's loadgroup appends."""
    head, at, tail = nodeid.rpartition("@")
    return head if at and "]" not in tail and "::" not in tail else nodeid


def group_of(item) -> str | None:
    marker = item.get_closest_marker("xdist_group")
    if marker is None:
        return None
    return marker.args[0] if marker.args else marker.kwargs.get("name")


def longest_first(items: list, seconds: dict[str, float]) -> list:
    """The items by unit (group, else module), the units by their total seconds, largest first; within an
    ungrouped module its tests longest first, a group's in file order."""
    def cost(item) -> float:
        return seconds.get(plain_id(item.nodeid), UNKNOWN_S)

    units: dict[str, list] = {}
    for item in items:
        group = group_of(item)
        units.setdefault(f"@{group}" if group else item.nodeid.split("::")[0], []).append(item)
    ordered = sorted(units.items(), key=lambda unit: -sum(cost(item) for item in unit[1]))
    found = []
    for key, members in ordered:
        found += members if key.startswith("@") else sorted(members, key=lambda item: -cost(item))
    return found


def unmarked_slow(measured: dict[str, float], slow_ids: set[str]) -> list[tuple[str, float]]:
    """(node id, seconds) of each measured test over SLOW_S without the slow mark, longest first."""
    over = [(nodeid, s) for nodeid, s in measured.items() if s > SLOW_S and nodeid not in slow_ids]
    return sorted(over, key=lambda pair: -pair[1])


def write(measured: dict[str, float], path: Path, about: str) -> None:
    """The file, node ids sorted, seconds to 0.1 s."""
    body = {"about": about, "seconds": {k: round(v, 1) for k, v in sorted(measured.items())}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body, indent=1) + "\n")
