"""Does `harness run --mode benchmark` time a submission like the official eval.py does? Run ON THE GPU DEVICE.

For one submission it runs, one after the other, on the same GPU:
  (a) the official eval.py in benchmark mode against our reference.py: eval.py and utils.py come from
      .peer/official/ (gitignored; carried to the device), copied into a temporary folder with our
      task.py, reference.py and the submission as submission.py; `POPCORN_FD=<fd> python eval.py
      benchmark cases.txt`, whose `key: value` lines are parsed;
  (b) `harness run N --mode benchmark --flush official`;
  (c) `harness run N --mode benchmark --flush fast`;
then prints per-shape means and the geometric-mean ratios, and writes protocol_agreement.json (plus the
logs of every run) to $OUT when it is set. Usage:

    python bench/tools/protocol_agreement.py 119 [--runs official,harness-official,harness-fast] [--cases official]

(`--runs harness-fast --cases small` exercises the script on a CPU.)
"""
import argparse
import json
import statistics
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from harness.run import cases as case_lists  # noqa: E402
from harness import submission as subs  # noqa: E402

OFFICIAL_DIR = REPO / ".peer" / "official"
RUN_NAMES = ("official", "harness-official", "harness-fast")
STATS_FIELDS = ("runs", "mean", "std", "err", "best", "worst")
RUN_LIMIT_S = 1500


# -- parsing (tested on the CPU) ----------------------------------------------------------------------

def parse_popcorn_log(text: str) -> dict:
    """eval.py's `key: value` lines as a dict of strings (the value is everything after the first ': ')."""
    parsed = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            parsed[key.strip()] = value.strip()
    return parsed


def official_results(parsed: dict) -> list:
    """Per benchmark: spec (dict), the Stats fields as numbers (None when the shape failed), error text."""
    shapes = []
    for index in range(int(parsed.get("benchmark-count", 0))):
        prefix = f"benchmark.{index}."
        spec_text = parsed.get(prefix + "spec", "")
        shape = {"spec": case_lists.parse_eval_lines(spec_text)[0] if spec_text else {},
                 "error": parsed.get(prefix + "error", "")}
        for field in STATS_FIELDS:
            raw = parsed.get(prefix + field)
            shape[field] = None if raw is None else (int(float(raw)) if field == "runs" else float(raw))
        shapes.append(shape)
    return shapes


def geomean(values: list):
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return statistics.geometric_mean(values)


def compare(series: dict, baseline: str) -> tuple:
    """Rows of per-shape means by run name, and each run's geomean divided by the baseline's geomean."""
    length = max(len(values) for values in series.values())
    rows = [{name: (values[i] if i < len(values) else None) for name, values in series.items()} for i in range(length)]
    base = geomean(series[baseline]) if baseline in series else None
    ratios = {}
    for name, values in series.items():
        value = geomean(values)
        ratios[name] = value / base if value is not None and base else None
    return rows, ratios


# -- running (GPU device only) -----------------------------------------------------------------------------

def run_official(submission: Path, specs: list, out_dir: Path | None) -> list:
    if not (OFFICIAL_DIR / "eval.py").is_file() or not (OFFICIAL_DIR / "utils.py").is_file():
        raise SystemExit(f"missing {OFFICIAL_DIR}/eval.py or utils.py (carry the official files there)")
    with tempfile.TemporaryDirectory(prefix="official-eval-") as folder:
        work = Path(folder)
        for name in ("eval.py", "utils.py"):
            shutil.copy(OFFICIAL_DIR / name, work / name)
        for name in ("task.py", "reference.py"):
            shutil.copy(REPO / name, work / name)
        shutil.copy(submission, work / "submission.py")
        (work / "cases.txt").write_text("\n".join(case_lists.spec_line(spec) for spec in specs) + "\n")
        read_end, write_end = os.pipe()
        env = {k: v for k, v in os.environ.items() if k not in ("POPCORN_SEED", "PYTHONPATH")}
        env["POPCORN_FD"] = str(write_end)
        # Console output goes to a file: a pipe could fill up while we read the report pipe to its end.
        with open(work / "console.txt", "wb") as console_file:
            process = subprocess.Popen([sys.executable, "eval.py", "benchmark", "cases.txt"], cwd=work, env=env,
                                       pass_fds=(write_end,), stdout=console_file, stderr=subprocess.STDOUT)
        os.close(write_end)
        with os.fdopen(read_end) as reports:
            text = reports.read()
        process.wait(timeout=RUN_LIMIT_S)
        console = (work / "console.txt").read_text(errors="replace")
    save(out_dir, "official-popcorn.txt", text)
    save(out_dir, "official-console.txt", console)
    if process.returncode not in (0, 112):
        print(f"official eval.py exited with {process.returncode}; see official-console.txt", file=sys.stderr)
    return official_results(parse_popcorn_log(text))


def run_harness(number: str, flush: str, cases_arg: str, out_dir: Path | None) -> list:
    ledger_file = (out_dir or Path(tempfile.gettempdir())) / "protocol_agreement_ledger.jsonl"
    env = {**os.environ, "HARNESS_LEDGER": str(ledger_file)}
    env.pop("POPCORN_SEED", None)
    done = subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", "run", number,
                           "--mode", "benchmark", "--cases", cases_arg, "--flush", flush, "--json"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=RUN_LIMIT_S)
    save(out_dir, f"harness-{flush}.json", done.stdout)
    save(out_dir, f"harness-{flush}.stderr.txt", done.stderr)
    if not done.stdout.strip():
        print(f"harness --flush {flush} printed nothing (exit {done.returncode}): {done.stderr[-500:]}",
              file=sys.stderr)
        return []
    (record,) = json.loads(done.stdout)
    return [{"spec": r["spec"], "error": r["message"] if r["status"] != "pass" else "",
             **{f: (r["stats"] or {}).get(f) for f in STATS_FIELDS}} for r in record["results"]]


def save(out_dir: Path | None, name: str, text: str) -> None:
    if out_dir is not None:
        (out_dir / name).write_text(text)


def print_table(specs: list, rows: list, ratios: dict) -> None:
    names = list(ratios)
    header = f"{'shape (bs, kv)':<16}" + "".join(f"{name + ' µs':>20}" for name in names)
    print(header)
    for spec, row in zip(specs, rows):
        cells = "".join(f"{row[n] / 1000:>20.2f}" if row[n] else f"{'-':>20}" for n in names)
        print(f"{spec['batchsize']:>4}, {spec['kvseqlen']:<10}" + cells)
    print(f"{'geomean ratio':<16}" + "".join(f"{r:>20.4f}" if r else f"{'-':>20}" for r in ratios.values()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submission", help="submission number, e.g. 119")
    parser.add_argument("--runs", default=",".join(RUN_NAMES), help="comma-separated subset of " + ", ".join(RUN_NAMES))
    parser.add_argument("--cases", default="official", help="official (default), small or a cases file")
    options = parser.parse_args()
    wanted = [name.strip() for name in options.runs.split(",") if name.strip()]
    unknown = sorted(set(wanted) - set(RUN_NAMES))
    if unknown:
        parser.error(f"unknown run(s): {', '.join(unknown)}")
    submission = subs.resolve(options.submission)
    out_dir = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
    specs = case_lists.load(options.cases, "benchmark")

    results = {}
    for name in wanted:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        if name == "official":
            results[name] = run_official(submission.path, specs, out_dir)
        else:
            results[name] = run_harness(options.submission, name.split("-", 1)[1], options.cases, out_dir)
    series = {name: [shape["mean"] for shape in shapes] for name, shapes in results.items()}
    baseline = "official" if "official" in series else wanted[0]
    rows, ratios = compare(series, baseline)
    summary = {"submission": submission.display_path(), "sha256": submission.sha256, "baseline": baseline,
               "specs": specs, "results": results, "geomean_ns": {n: geomean(v) for n, v in series.items()},
               "geomean_ratio_to_baseline": ratios}
    if "harness-official" in series and "harness-fast" in series:
        fast, official = geomean(series["harness-fast"]), geomean(series["harness-official"])
        summary["fast_over_official_flush"] = fast / official if fast and official else None
    save(out_dir, "protocol_agreement.json", json.dumps(summary, indent=2))
    print_table(specs, rows, ratios)
    if summary.get("fast_over_official_flush"):
        print(f"harness --flush fast / --flush official geomean: {summary['fast_over_official_flush']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
