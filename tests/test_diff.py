"""`harness diff`: per-shape speedups from a ledger written here, source diffs, nothing-comparable errors."""
import hashlib

import pytest
from click.testing import CliRunner
from rich.console import Console

from harness import display
from harness.results import diff as differ
from harness.results.records import usable
from harness.results import ledger
from harness.cli import main
import json
from harness import exits, paths
from harness.results import records
import helpers

H200 = {"name": "NVIDIA H200", "arch": "sm_90", "backend": "cuda"}
CPU = {"name": "cpu", "arch": "cpu", "backend": "cpu"}


def record(number, means, *, device=H200, mode="benchmark", cases="official", finished="2026-11-29T10:00:00",
           status="pass", path=None, sha="x"):
    results = [{"spec": {"batchsize": b, "qseqlen": 1, "kvseqlen": kv, "seed": 7}, "status": "pass",
                "stats": {"runs": 5, "mean": mean, "std": 1.0, "err": 0.5, "best": mean, "worst": mean}}
               for (b, kv), mean in means.items()]
    return {"source": "local", "submission": {"number": number, "path": path or f"submissions/{number:03d}_s.py",
                                              "sha256": sha},
            "mode": mode, "cases": cases, "device": device, "status": status, "reason": "",
            "results": results, "finished": finished}


def test_speedup_per_shape_and_geomean_from_the_latest_records():
    records = [record(119, {(4, 1024): 99000, (4, 8192): 99000}, finished="2026-11-29T08:00:00"),
               record(119, {(4, 1024): 20000, (4, 8192): 40000}),
               record(120, {(4, 1024): 10000, (4, 8192): 40000, (32, 1024): 5000})]
    c = differ.compare(usable(records), "119", "120")
    assert (c.device, c.mode, c.cases) == ("NVIDIA H200", "benchmark", "official")
    assert [(s.shape, s.speedup) for s in c.shapes] == [((4, 1, 1024), 2.0), ((4, 1, 8192), 1.0)]
    assert c.geomean_speedup == pytest.approx(2 ** 0.5)
    assert c.only_b == [(32, 1, 1024)] and c.only_a == []
    assert "left out, only B timed: b32 kv1k" in differ.notes(c)

    console = Console(width=120, record=True)
    console.print(display.diff_table(c))
    text = console.export_text()
    assert "b4 kv1k" in text and "20.0" in text and "10.0" in text and "2.00×" in text
    assert "geomean" in text and "28.3" in text and "20.0" in text and "1.41×" in text


def test_the_newest_gpu_group_wins_unless_a_device_is_named():
    records = [record(1, {(4, 1024): 30000}), record(2, {(4, 1024): 10000}),
               record(1, {(1, 64): 900000}, device=CPU, cases="small", finished="2026-11-29T12:00:00"),
               record(2, {(1, 64): 300000}, device=CPU, cases="small", finished="2026-11-29T12:05:00"),
               record(2, {(4, 1024): 1000}, mode="leaderboard", finished="2026-11-29T13:00:00")]
    default = differ.compare(usable(records), "1", "2")  # CPU timings are newer, but say little about a GPU
    assert (default.device, default.mode) == ("NVIDIA H200", "benchmark")
    assert default.geomean_speedup == pytest.approx(3.0)
    assert any("newer result of '1' on cpu" in line and "CPU timings" in line for line in differ.notes(default))
    on_cpu = differ.compare(usable(records), "1", "2", device="cpu")
    assert on_cpu.device == "cpu" and on_cpu.geomean_speedup == pytest.approx(3.0)


def test_nothing_comparable_says_why():
    records = [record(1, {(4, 1024): 30000}), record(2, {(1, 64): 10000}, device=CPU, cases="small"),
               record(3, {}, status="fail")]
    with pytest.raises(differ.NothingComparable, match="no timed shapes in common"):
        differ.compare(usable(records), "1", "2")
    with pytest.raises(differ.NothingComparable, match="no timed result of submission '3'"):
        differ.compare(usable(records), "1", "3")
    with pytest.raises(differ.NothingComparable, match="no timed shapes in common on the same device, mode and "
                                                       "cases on a device matching 'H200'"):
        differ.compare(usable(records), "1", "2", device="H200")
    with pytest.raises(differ.NothingComparable, match="in leaderboard mode"):
        differ.compare(usable(records), "1", "2", mode="leaderboard")
    only_cpu = [record(1, {(1, 64): 900000}, device=CPU, cases="small"), record(2, {(1, 64): 300000}, device=CPU,
                                                                                 cases="small")]
    with pytest.raises(differ.NothingComparable, match="only CPU timings.*--device cpu"):
        differ.compare(usable(only_cpu), "1", "2")


def test_a_path_argument_matches_the_record_of_that_file(tmp_path):
    other = tmp_path / "experiment.py"
    other.write_text("x = 1\n")
    records = [record(1, {(4, 1024): 30000}), record(None, {(4, 1024): 15000}, path=str(other))]
    c = differ.compare(usable(records), "1", str(other))
    assert c.b_label == str(other) and c.geomean_speedup == pytest.approx(2.0)  # an outside file: known by path
    assert differ.parse_ref("submissions/120_hip.py").number == 120


def test_source_diff_and_a_changed_file_warning(tmp_path):
    a = tmp_path / "001_a.py"
    b = tmp_path / "002_b.py"
    a.write_text("def custom_kernel(data):\n    return 1\n")
    b.write_text("def custom_kernel(data):\n    return 2\n")
    records = [record(1, {(4, 1024): 2000}, path=str(a), sha=hashlib.sha256(a.read_bytes()).hexdigest()),
               record(2, {(4, 1024): 1000}, path=str(b), sha="recorded-before-an-edit")]
    text, warnings = differ.source_diff(differ.compare(usable(records), str(a), str(b)))
    assert f"--- {a}" in text and f"+++ {b}" in text
    assert "-    return 1\n" in text and "+    return 2\n" in text
    assert warnings == [f"{b} changed since it was timed: the diff shows today's file"]
    b.unlink()
    with pytest.raises(differ.NothingComparable, match="cannot read"):
        differ.source_diff(differ.compare(usable(records), str(a), str(b)))


def test_cli_diff_prints_the_table_and_exits_2_when_nothing_compares():
    ledger.append(record(1, {(4, 1024): 30000}))
    ledger.append(record(2, {(4, 1024): 10000}))
    result = CliRunner().invoke(main, ["diff", "1", "2"])
    assert result.exit_code == 0, result.output
    assert "3.00×" in result.output and "note: A recorded 2026-11-29T10:00:00" in result.output
    missing = CliRunner().invoke(main, ["diff", "1", "9"])
    assert missing.exit_code == 2
    assert missing.output.strip().startswith("error: no submission numbered 9 in ")  # as `harness run 9` says
    assert CliRunner().invoke(main, ["diff", "1", "2", "--mode", "fast"]).exit_code == 2


def test_a_file_changed_since_it_was_timed_is_said_in_the_notes(tmp_path):
    old, new = tmp_path / "01_a.py", tmp_path / "02_b.py"
    old.write_text("v1\n")
    new.write_text("v2\n")
    sha = hashlib.sha256(b"v2\n").hexdigest()
    means = {(4, 1024): 20000}
    records = [record(None, means, path=str(old), sha=hashlib.sha256(b"v0\n").hexdigest()),
               record(None, means, path=str(new), sha=sha)]
    c = differ.compare(usable(records), str(old), str(new))
    changed = [line for line in differ.notes(c) if "changed since it was timed" in line]
    assert len(changed) == 1 and changed[0].startswith("A's file")


def test_a_submission_against_itself_says_each_note_once(tmp_path):
    path = tmp_path / "ledger.jsonl"
    ledger.append(record(1, {(4, 1024): 30000}), path)
    ledger.append(record(1, {(1, 64): 900000}, device=CPU, cases="small", finished="2026-11-30T10:00:00"), path)
    result = CliRunner().invoke(main, ["diff", "1", "1", "--ledger", str(path)], env={"COLUMNS": "200"})
    notes = [line for line in result.output.splitlines() if line.startswith("note: ")]
    assert result.exit_code == 0 and len(notes) == len(set(notes)), result.output
    assert any("a newer result of '1' on cpu" in line for line in notes)


CPU_DEVICE = records.Device(name="cpu (x86_64)", arch="cpu", backend="cpu")


H200_DEVICE = records.Device(name="NVIDIA H200_DEVICE", arch="sm_90", backend="cuda")


def timed_record(number: int, name: str, *, device=CPU_DEVICE, interpreter=False, means=None):
    means = means or {(1, 64): 900000.0, (2, 4500): 950000.0}
    results = [{"spec": {"batchsize": b, "qseqlen": 1, "kvseqlen": kv, "seed": 1}, "status": "pass", "message": "",
                "stats": {"runs": 3, "mean": mean, "std": 1.0, "err": 1.0, "best": mean, "worst": mean}, "notes": {}}
               for (b, kv), mean in means.items()]
    return records.new_record(
        source="local", submission=records.SubmissionInfo(number=number, path=f"submissions/{name}", sha256=name,
                                                          requirements=["torch"], optional=[], numbered=True),
        mode="benchmark", cases="small", flush="none", device=device, versions={}, status="pass", reason="",
        results=results, warnings=[], started="2026-12-01T10:00:00", finished="2026-12-01T10:00:00",
        interpreter=interpreter)


def test_diff_names_the_interpreter_when_one_side_ran_there_only_through_it():
    ledger.append(timed_record(1, "001_torch_reference.py"))
    ledger.append(timed_record(201, "201_triton_fp8kv.py", interpreter=True))
    result = helpers.invoke("diff", "001", "201", "--device", "cpu")
    assert result.exit_code == exits.EXIT_USAGE
    assert "run both there first" not in result.output, result.output
    assert "'201'" in result.output and "interpreter" in result.output and "--include-interpreter" in result.output
    shown = helpers.invoke("diff", "001", "201", "--device", "cpu", "--include-interpreter")
    assert shown.exit_code == 0, shown.output


def test_diff_source_piped_has_no_padding():
    ledger.append(timed_record(119, "119_bmm_triton_hybrid.py", device=H200_DEVICE))
    ledger.append(timed_record(200, "200_triton_mxfp4.py", device=H200_DEVICE))
    done = helpers.harness("diff", "119", "200", "--source", env={paths.LEDGER_ENV: str(paths.ledger_file())})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("+++ submissions/200_triton_mxfp4.py") for line in lines)
    padded = [line for line in lines if line != line.rstrip() and line.strip()]  # " " alone: an empty context line
    assert not padded, "lines padded with spaces"


def test_diff_of_an_unknown_number_says_what_run_says():
    ledger.append(timed_record(200, "200_triton_mxfp4.py", device=H200_DEVICE))
    diffed, ran = helpers.invoke("diff", "999", "200"), helpers.invoke("run", "999")
    assert diffed.exit_code == ran.exit_code == exits.EXIT_USAGE
    assert "no submission numbered 999" in diffed.output and "no submission numbered 999" in ran.output


def test_diff_device_takes_the_words_run_takes():
    ledger.append(timed_record(119, "119_bmm_triton_hybrid.py", device=H200_DEVICE, means={(4, 1024): 30000.0}))
    ledger.append(timed_record(200, "200_triton_mxfp4.py", device=H200_DEVICE, means={(4, 1024): 10000.0}))
    ledger.append(timed_record(119, "119_bmm_triton_hybrid.py"))
    ledger.append(timed_record(200, "200_triton_mxfp4.py"))
    on_gpu = helpers.invoke("diff", "119", "200", "--device", "cuda")  # run's "cuda": any GPU
    assert on_gpu.exit_code == 0, on_gpu.output
    assert "compared on NVIDIA H200_DEVICE" in " ".join(on_gpu.output.split())
    on_cpu = helpers.invoke("diff", "119", "200", "--device", "cpu", "--json")
    assert on_cpu.exit_code == 0 and json.loads(on_cpu.output)["device"] == "cpu (x86_64)"
    assert helpers.invoke("diff", "119", "200", "--device", "auto").exit_code == 0
