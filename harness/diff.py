"""`harness diff A B`: per-shape speedup of submission B over A from their latest comparable records.

Comparable = same device, mode and case set, both with timed passing cases. When several such
groups exist, the one whose records are most recent wins (unless --device / --mode narrow it).
Only reads the ledger.
"""
from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table as RichTable

from harness import records
from harness.figures import format_us, geomean
from harness.paths import REPO_ROOT
from harness.records import case_means, label, shape_label

NUMBERED_NAME = re.compile(r"^(\d+)_")


class NothingComparable(ValueError):
    """No pair of records of A and B can be compared; the message is one line for the user."""


@dataclass(frozen=True)
class SubmissionRef:
    """What the user typed for A or B: a submission number and/or a file path."""
    text: str
    number: int | None
    path: Path | None

    def matches(self, record: dict, root: Path = REPO_ROOT) -> bool:
        sub = record["submission"]
        if self.number is not None and sub["number"] == self.number:
            return True
        if self.path is not None and sub["path"]:
            recorded = Path(sub["path"])
            recorded = recorded if recorded.is_absolute() else Path(root) / recorded
            return recorded.resolve() == self.path.resolve()
        return False


def parse_ref(text: str) -> SubmissionRef:
    """'120' -> number 120; 'submissions/120_x.py' -> that path (and number 120); other paths as given."""
    text = text.strip()
    if text.isdigit():
        return SubmissionRef(text, int(text), None)
    path = Path(text)
    found = NUMBERED_NAME.match(path.name)
    return SubmissionRef(text, int(found.group(1)) if found else None, path)


@dataclass
class ShapeTimes:
    shape: tuple
    a_ns: float
    b_ns: float

    @property
    def speedup(self) -> float:
        return self.a_ns / self.b_ns


@dataclass
class Comparison:
    a_record: dict
    b_record: dict
    device: str
    mode: str
    cases: str
    shapes: list          # ShapeTimes for every shape both timed
    only_a: list          # shapes only A timed
    only_b: list

    @property
    def geomean_speedup(self) -> float:
        return geomean(s.a_ns for s in self.shapes) / geomean(s.b_ns for s in self.shapes)

    @property
    def a_label(self) -> str:
        return label(self.a_record)

    @property
    def b_label(self) -> str:
        return label(self.b_record)


def _latest_timed(everything: list[dict], ref: SubmissionRef, device: str | None, mode: str | None) -> dict:
    """group -> the latest record of `ref` there that has at least one timed passing case."""
    def wanted(record):
        group = records.group_key(record)
        return (ref.matches(record) and case_means(record) and (device is None or device.lower() in group[0].lower())
                and (mode is None or group[1] == mode))
    return records.latest_by([r for r in everything if wanted(r)], records.group_key)


def compare(everything: list[dict], a: str, b: str, *, device: str | None = None,
            mode: str | None = None) -> Comparison:
    """B against A on their most recent comparable records (harness/records.py); NothingComparable when none."""
    ref_a, ref_b = parse_ref(a), parse_ref(b)
    latest_a = _latest_timed(everything, ref_a, device, mode)
    latest_b = _latest_timed(everything, ref_b, device, mode)
    where = "".join([f" on a device matching '{device}'" if device else "", f" in {mode} mode" if mode else ""])
    for ref, latest in ((ref_a, latest_a), (ref_b, latest_b)):
        if not latest:
            raise NothingComparable(f"no timed result of submission '{ref.text}' in the ledger{where}")
    candidates = []
    for group in set(latest_a) & set(latest_b):
        rec_a, rec_b = latest_a[group], latest_b[group]
        if set(case_means(rec_a)) & set(case_means(rec_b)):
            stamps = sorted((rec_a["finished"], rec_b["finished"]))
            candidates.append((stamps[1], stamps[0], group))
    if not candidates:
        raise NothingComparable(f"'{a}' and '{b}' have no timed shapes in common on the same device, mode "
                                f"and cases{where}; run both there first (harness run {a} {b} --mode benchmark)")
    *_, group = max(candidates)
    rec_a, rec_b = latest_a[group], latest_b[group]
    means_a, means_b = case_means(rec_a), case_means(rec_b)
    shapes = [ShapeTimes(s, means_a[s], means_b[s]) for s in sorted(set(means_a) & set(means_b))]
    return Comparison(a_record=rec_a, b_record=rec_b, device=group[0], mode=group[1], cases=group[2],
                      shapes=shapes, only_a=sorted(set(means_a) - set(means_b)),
                      only_b=sorted(set(means_b) - set(means_a)))


def _speedup_text(value: float) -> str:
    colour = "green" if value > 1.005 else "red" if value < 0.995 else "default"
    return f"[{colour}]{value:.2f}×[/{colour}]"


def render_table(comparison: Comparison) -> RichTable:
    """Per-shape times of A and B in µs and B's speedup over A, geomean last."""
    c = comparison
    table = RichTable(title=f"{c.b_label} over {c.a_label}\n{c.device} · {c.mode} · {c.cases} cases",
                      caption="speedup = A's time / B's time (> 1: B is faster)")
    table.add_column("shape")
    table.add_column(f"A {c.a_label} (µs)", justify="right")
    table.add_column(f"B {c.b_label} (µs)", justify="right")
    table.add_column("speedup", justify="right")
    for s in c.shapes:
        table.add_row(shape_label(s.shape), format_us(s.a_ns), format_us(s.b_ns), _speedup_text(s.speedup))
    table.add_section()
    table.add_row("geomean", format_us(geomean(s.a_ns for s in c.shapes)),
                  format_us(geomean(s.b_ns for s in c.shapes)), _speedup_text(c.geomean_speedup))
    return table


def notes(comparison: Comparison) -> list[str]:
    """One-line remarks: shapes only one side timed, records that did not pass overall, their dates."""
    c = comparison
    lines = [f"A recorded {c.a_record['finished'] or '?'}, B recorded {c.b_record['finished'] or '?'}"]
    if c.only_a:
        lines.append(f"left out, only A timed: {', '.join(shape_label(s) for s in c.only_a)}")
    if c.only_b:
        lines.append(f"left out, only B timed: {', '.join(shape_label(s) for s in c.only_b)}")
    for side, record in (("A", c.a_record), ("B", c.b_record)):
        if record["status"] != "pass":
            lines.append(f"{side}'s run ended '{record['status']}': {record['reason']}".rstrip(": "))
    if c.device.endswith("(remote)"):
        lines.append("remote times are rounded as popcorn prints them: speedups are approximate")
    return lines


def source_diff(comparison: Comparison, root: Path = REPO_ROOT) -> tuple[str, list[str]]:
    """A unified diff of the two files as they are now, and warnings when a file changed since it was timed."""
    texts, warnings = [], []
    for record in (comparison.a_record, comparison.b_record):
        sub = record["submission"]
        path = Path(sub["path"])
        file = path if path.is_absolute() else Path(root) / path
        try:
            data = file.read_bytes()
        except OSError:
            raise NothingComparable(f"cannot read {path} for --source: the file is gone or unreadable") from None
        if sub["sha256"] and hashlib.sha256(data).hexdigest() != sub["sha256"]:
            warnings.append(f"{path} changed since it was timed: the diff shows today's file")
        lines = data.decode("utf-8", errors="replace").splitlines()
        texts.append((str(path), [line + "\n" for line in lines]))
    (name_a, lines_a), (name_b, lines_b) = texts
    return "".join(difflib.unified_diff(lines_a, lines_b, fromfile=name_a, tofile=name_b)), warnings
