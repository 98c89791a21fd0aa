"""Per-shape MI355X times from raw popcorn logs committed to public repositories (issue 29's calibration rows).

Usage: python bench/tools/popcorn_figures.py GIT_DIR LOG_GLOB [SUBMISSION_DIR]
GIT_DIR is a mirror (the `fetch` tool's .../repo). Every log ever added under LOG_GLOB is read at the commit that
added it, parsed with harness/remote/popcorn_report.py, and printed as one JSON line: the log's path, commit and
date, each stage's per-shape means (us), the aiter asm kernels the runner loaded, and the candidate timed files
(the vNN file of SUBMISSION_DIR in any commit, and submission.py beside it at the log's commit) with their sha256.
Facts only: which file a log timed is decided by reading, not by this script.
"""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import PurePosixPath

from harness.remote import popcorn_report

ASM_RE = re.compile(r"hipModuleLoad: \S*/(mla_[A-Za-z0-9_]+\.co)")
VERSION_RE = re.compile(r"(v\d+)")


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True,
                          check=True).stdout


def blob(git_dir: str, commit: str, path: str) -> bytes | None:
    done = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"], capture_output=True)
    return done.stdout if done.returncode == 0 else None


def added_logs(git_dir: str, glob: str) -> list[tuple]:
    """(commit, iso date, path) of every file added under `glob`, in any commit."""
    found, commit, date = [], None, None
    out = git(git_dir, "log", "--all", "--diff-filter=A", "--format=C %H %ad", "--date=iso-strict",
              "--name-only", "--", glob)
    for line in out.splitlines():
        if line.startswith("C "):
            _, commit, date = line.split()
        elif line.strip():
            found.append((commit, date, line.strip()))
    return found


def stages(text: str) -> dict:
    """Stage name -> {"status", "means_us": {"BxKV": us}} from the report inside a log."""
    start = text.find('"**')
    if start < 0:
        return {}
    try:
        report = popcorn_report.parse_report(text[start:])
    except popcorn_report.ReportFormatError as error:
        return {"unparsed": {"status": str(error), "means_us": {}}}
    found = {}
    for run in (r for r in report.runs if r.run == "public"):
        for stage in run.stages:
            means = {f"{r.spec['batchsize']}x{r.spec['kvseqlen']}": round(r.mean.ns / 1e3, 3)
                     for r in stage.results if r.spec and r.mean is not None}
            found[stage.name] = {"status": stage.status, "reason": stage.reason, "means_us": means}
    return found


def candidates(git_dir: str, commit: str, log_path: str, submission_dir: str | None) -> list[dict]:
    """Files the log may have timed: submission.py beside the logs' folder at the log's commit, and vNN files."""
    root = PurePosixPath(log_path).parents[2]  # kernels/mixed-mla/state/logs/x.log -> kernels/mixed-mla
    found = []
    for path in (str(root / "submission.py"), str(root / "best_submission.py")):
        data = blob(git_dir, commit, path)
        if data is not None:
            found.append({"path": path, "commit": commit, "sha256": hashlib.sha256(data).hexdigest()})
    version = VERSION_RE.search(PurePosixPath(log_path).name)
    if submission_dir and version:
        out = git(git_dir, "log", "--all", "--format=C %H", "--name-only", "--", f"{submission_dir}/{version[1]}_*")
        seen, at = set(), None
        for line in out.splitlines():
            if line.startswith("C "):
                at = line.split()[1]
            elif line.strip() and line not in seen:
                data = blob(git_dir, at, line.strip())
                if data is not None:
                    seen.add(line)
                    found.append({"path": line.strip(), "commit": at,
                                  "sha256": hashlib.sha256(data).hexdigest()})
    return found


def main(argv: list[str]) -> int:
    git_dir, glob = argv[1], argv[2]
    submission_dir = argv[3] if len(argv) > 3 else None
    for commit, date, path in added_logs(git_dir, glob):
        data = blob(git_dir, commit, path)
        if data is None:
            continue
        text = data.decode("utf-8", "replace")
        print(json.dumps({"log": path, "commit": commit, "date": date, "stages": stages(text),
                          "asm_kernels": sorted(set(ASM_RE.findall(text))),
                          "timed": candidates(git_dir, commit, path, submission_dir)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
