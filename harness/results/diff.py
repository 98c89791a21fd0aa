"""`harness diff A B`: per-shape speedup of submission B over A from their latest comparable records.

Comparable = same device, mode and case set, both with timed passing cases. Which group is compared
is explicit: --device NAME picks it; by default it is the newest group holding both on a real device
(a GPU, or MI355X through popcorn), never CPU timings, and never times taken through the Triton
interpreter unless asked for (--include-interpreter). The output names the group. Only reads the ledger.
"""
from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.results import records
from harness.results.figures import format_us, geomean
from harness import paths
from harness.paths import REPO_ROOT, SUBMISSIONS_DIR
from harness.results.records import case_means, label, shape_label

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
        if self.number is not None:
            return sub["numbered"] and sub["number"] == self.number
        if self.path is not None and sub["path"]:
            recorded = Path(sub["path"])
            recorded = recorded if recorded.is_absolute() else Path(root) / recorded
            return recorded.resolve() == self.path.resolve()
        return False


def parse_ref(text: str) -> SubmissionRef:
    """'120' -> number 120; 'submissions/120_x.py' -> number 120; any other path by its path (a leading
    number outside submissions/ means nothing)."""
    text = text.strip()
    if text.isdigit():
        return SubmissionRef(text, int(text), None)
    path = Path(text)
    found = NUMBERED_NAME.match(path.name)
    inside = path.resolve().parent == SUBMISSIONS_DIR.resolve()
    return SubmissionRef(text, int(found.group(1)) if found and inside else None, None if found and inside else path)


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
    left_out: list = field(default_factory=list)  # newer timed records not compared, one line each

    @property
    def geomean_speedup(self) -> float:
        return geomean(s.a_ns for s in self.shapes) / geomean(s.b_ns for s in self.shapes)

    @property
    def a_label(self) -> str:
        return label(self.a_record)

    @property
    def b_label(self) -> str:
        return label(self.b_record)


def on_real_device(record: dict) -> bool:
    """Timed on a GPU or on MI355X through popcorn: what the leaderboard ranks."""
    return record["device"]["backend"] != "cpu" and records.real_timings(record)


def _on_device(record: dict, device: str) -> bool:
    """--device as `run` means its words (cuda: any local GPU, ROCm included; cpu: the CPU), else a name match."""
    backend = record["device"]["backend"]
    if device in ("cuda", "cpu"):
        return backend in ("cuda", "rocm") if device == "cuda" else backend == "cpu"
    return device.lower() in record["device"]["name"].lower()


def _comparable(record: dict, device: str | None, mode: str | None, include_interpreter: bool) -> bool:
    """May this record be compared under the user's --device / --mode / --include-interpreter?"""
    if mode is not None and record["mode"] != mode:
        return False
    if record.get("standin") or records.emulated(record):  # stand-in and emulator times: never compared
        return False
    matches_device = device is None or _on_device(record, device)
    if record["interpreter"]:
        return include_interpreter and matches_device
    return matches_device if device is not None else on_real_device(record)


def _why_nothing(timed_a: list, timed_b: list, a: str, b: str, device: str | None, mode: str | None,
                 include_interpreter: bool) -> str:
    """Why the timed records the two have do not make a comparison, in one line."""
    timed = timed_a + timed_b
    if timed and all(record.get("standin") for record in timed):
        return (f"no real timings of '{a}' and '{b}' to compare: they ran on the aiter stand-in (correctness only), "
                "whose times say nothing about MI355X")
    if timed and all(record["interpreter"] for record in timed):
        return (f"no real timings of '{a}' and '{b}' to compare: their times in the ledger ran through the Triton "
                "interpreter on a CPU (TRITON_INTERPRET=1) and say nothing about a GPU; run both on a GPU "
                f"(harness run {a} {b} --mode benchmark), or pass --include-interpreter to compare them anyway")
    if device is None and timed and all(record["device"]["backend"] == "cpu" for record in timed):
        return (f"'{a}' and '{b}' have only CPU timings, which say little about the GPU they are written for; "
                "pass --device cpu to compare those anyway")
    where = (f" on a device matching '{device}'" if device else " on a GPU") + (f" in {mode} mode" if mode else "")
    for text, side in ((a, timed_a), (b, timed_b)):
        there = [record for record in side if _comparable(record, device, mode, True)]
        if not include_interpreter and there and all(record["interpreter"] for record in there):
            return (f"'{text}' was timed{where} only through the Triton interpreter (TRITON_INTERPRET=1), whose "
                    "times say nothing about a GPU and are left out; pass --include-interpreter to compare them")
    return (f"'{a}' and '{b}' have no timed shapes in common on the same device, mode and cases{where}; "
            f"run both there first (harness run {a} {b} --mode benchmark)")


def _unknown(ref: SubmissionRef, everything: list[dict]) -> str:
    """Why a side has no timed result: a number nothing knows is worded as `harness run` words it."""
    numbered_files = (NUMBERED_NAME.match(p.name) for p in SUBMISSIONS_DIR.glob("*.py"))
    known = ({int(m.group(1)) for m in numbered_files if m} | {r["submission"]["number"] for r in everything
                                                               if r["submission"]["numbered"]})
    if ref.number is not None and ref.number not in known:
        return f"no submission numbered {ref.number} in {SUBMISSIONS_DIR} or in the ledger"
    return f"no timed result of submission '{ref.text}' in the ledger"


def compare(everything: list[dict], a: str, b: str, *, device: str | None = None, mode: str | None = None,
            include_interpreter: bool = False) -> Comparison:
    """B against A on their most recent comparable records (harness/results/records.py); NothingComparable when none."""
    ref_a, ref_b = parse_ref(a), parse_ref(b)
    device = None if device == "auto" else device
    timed = {}
    for ref in (ref_a, ref_b):
        timed[ref] = [record for record in everything if ref.matches(record) and case_means(record)]
        if not timed[ref]:
            raise NothingComparable(_unknown(ref, everything))
    latest_a, latest_b = ({group: record for group, record in records.latest_by(
        [r for r in timed[ref] if _comparable(r, device, mode, include_interpreter)], records.group_key).items()}
        for ref in (ref_a, ref_b))
    candidates = []
    for group in set(latest_a) & set(latest_b):
        rec_a, rec_b = latest_a[group], latest_b[group]
        if set(case_means(rec_a)) & set(case_means(rec_b)):
            stamps = sorted((rec_a["finished"], rec_b["finished"]))
            candidates.append((stamps[1], stamps[0], group))
    if not candidates:
        raise NothingComparable(_why_nothing(timed[ref_a], timed[ref_b], a, b, device, mode, include_interpreter))
    *_, group = max(candidates)
    rec_a, rec_b = latest_a[group], latest_b[group]
    means_a, means_b = case_means(rec_a), case_means(rec_b)
    shapes = [ShapeTimes(s, means_a[s], means_b[s]) for s in sorted(set(means_a) & set(means_b))]
    newer = {}  # per side, its newest timed record that the comparison leaves out (once when A is B)
    for ref, rec in ((ref_a, rec_a), (ref_b, rec_b)):
        skipped = [r for r in timed[ref] if r["finished"] > rec["finished"] and records.group_key(r) != group]
        if skipped:
            newest = max(skipped, key=lambda r: r["finished"])
            newer.setdefault(id(newest), (ref.text, newest))
    left_out = [f"a newer result of '{text}' on {r['device']['name']} ({r['mode']}, {r['finished']}) is not compared: "
                + ("its times ran through the Triton interpreter" if r["interpreter"] else
                   "it ran on the aiter stand-in (correctness only)" if r.get("standin") else
                   "it is not in a group both submissions share" if on_real_device(r) or device else
                   "CPU timings say little about a GPU") for text, r in newer.values()]
    return Comparison(a_record=rec_a, b_record=rec_b, device=group[0], mode=group[1], cases=group[2],
                      shapes=shapes, only_a=sorted(set(means_a) - set(means_b)),
                      only_b=sorted(set(means_b) - set(means_a)), left_out=left_out)


def regressions(comparison: Comparison, percent: float) -> list[str]:
    """Every shape, and the geomean, where B is slower than A by more than `percent` %."""
    limit = 1 + percent / 100
    found = [f"{shape_label(s.shape)}: {format_us(s.b_ns)} µs vs {format_us(s.a_ns)} µs "
             f"({(s.b_ns / s.a_ns - 1) * 100:+.1f}%)" for s in comparison.shapes if s.b_ns > s.a_ns * limit]
    if 1 / comparison.geomean_speedup > limit:
        found.append(f"geomean: {(1 / comparison.geomean_speedup - 1) * 100:+.1f}%")
    return found


def same_file(comparison: Comparison) -> bool:
    return comparison.a_record["submission"]["sha256"] == comparison.b_record["submission"]["sha256"]


def as_json(comparison: Comparison, fail_above: float | None = None) -> dict:
    """The comparison as plain data, for scripts."""
    c = comparison
    data = {"a": {"label": c.a_label, "path": c.a_record["submission"]["path"], "run_id": c.a_record["run_id"]},
            "b": {"label": c.b_label, "path": c.b_record["submission"]["path"], "run_id": c.b_record["run_id"]},
            "device": c.device, "mode": c.mode, "cases": c.cases, "same_file": same_file(c),
            "shapes": [{"shape": shape_label(s.shape), "a_ns": s.a_ns, "b_ns": s.b_ns, "speedup": s.speedup}
                       for s in c.shapes],
            "geomean": {"a_ns": geomean(s.a_ns for s in c.shapes), "b_ns": geomean(s.b_ns for s in c.shapes),
                        "speedup": c.geomean_speedup},
            "notes": notes(c)}
    if fail_above is not None:
        data["regressions"] = regressions(c, fail_above)
    return data


def notes(comparison: Comparison) -> list[str]:
    """One-line remarks: shapes only one side timed, records that did not pass overall, their dates."""
    c = comparison
    one_record = c.a_record is c.b_record  # `diff 1 1`: one record on both sides
    lines = [f"A and B are one record, recorded {c.a_record['finished'] or '?'}" if one_record else
             f"A recorded {c.a_record['finished'] or '?'}, B recorded {c.b_record['finished'] or '?'}"]
    if same_file(c):
        lines.append("A and B are the same file (same sha256): any difference is run-to-run noise")
    if c.a_record["interpreter"] or c.b_record["interpreter"]:
        lines.append("times taken through the Triton interpreter (--include-interpreter): they say nothing about a GPU")
    lines += c.left_out
    if c.only_a:
        lines.append(f"left out, only A timed: {', '.join(shape_label(s) for s in c.only_a)}")
    if c.only_b:
        lines.append(f"left out, only B timed: {', '.join(shape_label(s) for s in c.only_b)}")
    for side, record in (("A", c.a_record),) if one_record else (("A", c.a_record), ("B", c.b_record)):
        if record["status"] != "pass":
            lines.append(f"{side}'s run ended '{record['status']}': {record['reason']}".rstrip(": "))
    if c.device.endswith("(remote)"):
        lines.append("remote times are rounded as popcorn prints them: speedups are approximate")
    for side, record in (("A", c.a_record), ("B", c.b_record)):
        if changed_since(record):
            lines.append(f"{side}'s file {record['submission']['path']} changed since it was timed (its sha256 "
                         "differs): these times are of the older version")
    return lines


def changed_since(record: dict, root: Path = REPO_ROOT) -> bool:
    """The record's file is still there with other bytes than were run (a gone file says nothing)."""
    sub = record["submission"]
    path = Path(sub["path"])
    try:
        data = (path if path.is_absolute() else Path(root) / path).read_bytes()
    except OSError:
        return False
    return bool(sub["sha256"]) and hashlib.sha256(data).hexdigest() != sub["sha256"]


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
        if changed_since(record, root):
            warnings.append(f"{path} changed since it was timed: the diff shows today's file")
        texts.append((str(path), data))
    return _unified(*texts), warnings


def files_diff(a: Path, b: Path, root: Path = REPO_ROOT) -> str:
    """A unified diff of two files as they are now (for --source when nothing of theirs was timed)."""
    return _unified(*((paths.shown(path, root), Path(path).read_bytes()) for path in (a, b)))


def _unified(a: tuple[str, bytes], b: tuple[str, bytes]) -> str:
    (name_a, data_a), (name_b, data_b) = a, b
    lines_a, lines_b = ([line + "\n" for line in data.decode("utf-8", errors="replace").splitlines()]
                        for data in (data_a, data_b))
    return "".join(difflib.unified_diff(lines_a, lines_b, fromfile=name_a, tofile=name_b))
