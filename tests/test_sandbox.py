"""The child cannot change anything outside its scratch space (harness/sandbox/): every hostile sample in
tests/samples/hostile fails with its reason through the real CLI, under the bwrap sandbox and under the fallback's
file checks, on a copy of the repository that stays clean; the parts (bwrap's command, the snapshot, the process
hunt, the choice of protection) on their own."""
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness import paths
from helpers import HARNESS, copy_of_repository
from harness.results import ledger
from harness.sandbox import bwrap, filecheck, guard, procs

# Its module-wide fixtures run once: make test gives the whole file to one xdist worker (--dist loadgroup).
pytestmark = pytest.mark.xdist_group("sandbox")

REPO = paths.REPO_ROOT
HOSTILE = REPO / "tests" / "samples" / "hostile"
WRONG_SHAPE = "tests/samples/bad/wrong_shape.py"
ONE_CASE = "- {batchsize: 1, qseqlen: 1, kvseqlen: 64, seed: 7}\n"
GRANDCHILD_MARK = "hostile-setsid-grandchild"
FORGED_MARK = "forged-by-hostile-sample"
NO_SANDBOX = bwrap.why_not()


def expected_verdicts(path: Path) -> dict:
    """{'sandbox': words, 'files': words} from the sample's `# verdict PROTECTION: words` lines."""
    return dict(re.findall(r"^# verdict (sandbox|files): (.+)$", path.read_text(encoding="utf-8"), re.MULTILINE))


# ------------------------------------------------------------------ the whole thing, through the CLI

def harness_cli(copy: Path, env: dict, device: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([*HARNESS, "run", *args, "--device",
                           device, "--cases", str(copy.parent / "one_case.yml"), "--json"],
                          cwd=copy, env=env, capture_output=True, text=True, timeout=600)


def through_the_cli(root: Path, protection: str, device: str = "cpu", after: tuple = (WRONG_SHAPE,)) -> dict:
    """Every hostile sample in one `harness run`, then the wrong-shape sample in the next, on a copy of the repo."""
    copy = copy_of_repository(root / "repo", commit=True)
    (root / "one_case.yml").write_text(ONE_CASE)
    cache = root / "hip-cache"  # a small stand-in for the HIP toolchain cache, with one precompiled header
    (cache / "pch").mkdir(parents=True)
    (cache / "stubs").mkdir()
    (cache / "pch" / "gfx950-test.pch").write_bytes(b"PCH" * 1000)
    env = {**os.environ, "PYTHONPATH": str(copy), "HARNESS_RESULTS": str(root / "results"), "COLUMNS": "200",
           "HARNESS_HIP_CACHE": str(cache)}
    for name in ("HARNESS_LEDGER", "HARNESS_DEBUG"):
        env.pop(name, None)
    samples = sorted(str(path.relative_to(REPO)) for path in HOSTILE.glob("*.py"))
    hostile = harness_cli(copy, env, device, *samples, "--protection", protection)
    ended = time.monotonic()
    later = harness_cli(copy, env, device, *after, "--protection", protection)
    return {"copy": copy, "cache": cache, "hostile": hostile, "after": later, "ended": ended,
            "ledger": root / "results" / "ledger.jsonl"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Both protections at once (each on its own copy), then 10 s past the later run for the setsid grandchildren."""
    protections = ["files"] + ([] if NO_SANDBOX else ["sandbox"])
    found = {}
    threads = [threading.Thread(target=lambda p=p: found.__setitem__(p, through_the_cli(
        tmp_path_factory.mktemp(p), p))) for p in protections]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wait_past(max(run["ended"] for run in found.values()), 10.5)
    return found


def wait_past(moment: float, seconds: float) -> None:
    time.sleep(max(0.0, seconds - (time.monotonic() - moment)))


def records_by_name(done: subprocess.CompletedProcess) -> dict:
    return {Path(record["submission"]["path"]).stem: record for record in json.loads(done.stdout)}


def assert_each_failed_with_its_reason(run: dict, kind: str) -> None:
    assert run["hostile"].returncode == 1, run["hostile"].stderr[-2000:]
    records = records_by_name(run["hostile"])
    samples = sorted(HOSTILE.glob("*.py"))
    assert len(samples) >= 9 and set(records) == {path.stem for path in samples}
    for path in samples:
        record = records[path.stem]
        words = expected_verdicts(path)[kind]
        assert record["status"] in ("fail", "error") and words in record["reason"], (path.name, record["reason"])
        assert "\n" not in record["reason"] and record["protection"] == guard.LABELS[kind]
    assert f"protection: {guard.LABELS[kind]}" in run["hostile"].stderr


def assert_nothing_changed(run: dict) -> None:
    status = subprocess.run(["git", "status", "--porcelain"], cwd=run["copy"], capture_output=True, text=True)
    assert status.returncode == 0 and status.stdout == "", status.stdout
    assert [path.name for path in (run["cache"] / "pch").iterdir()] == ["gfx950-test.pch"]
    assert (run["cache"] / "pch" / "gfx950-test.pch").read_bytes() == b"PCH" * 1000
    assert not (run["cache"] / "stubs" / "poison.h").exists()
    written = ledger.read(run["ledger"])
    assert written and all(record["run_id"] != FORGED_MARK for record in written)
    after = records_by_name(run["after"])["wrong_shape"]
    assert run["after"].returncode == 1 and after["status"] == "fail", after["reason"]
    assert not [pid for pid in procs.table() if GRANDCHILD_MARK in procs.command_line(pid)]


@pytest.mark.slow
@pytest.mark.parametrize("protection", ["sandbox", "files"])
def test_every_hostile_sample_fails_with_its_reason(runs, protection):
    if protection not in runs:
        pytest.skip(f"no sandbox on this machine: {NO_SANDBOX}")
    assert_each_failed_with_its_reason(runs[protection], protection)
    hostile = [record for record in ledger.read(runs[protection]["ledger"]) if "hostile" in record["submission"]["path"]]
    assert len(hostile) == len(list(HOSTILE.glob("*.py"))) and {r["status"] for r in hostile} <= {"fail", "error"}


@pytest.mark.slow
@pytest.mark.parametrize("protection", ["sandbox", "files"])
def test_nothing_changed_on_disk_no_process_is_left_and_a_wrong_shape_still_fails(runs, protection):
    if protection not in runs:
        pytest.skip(f"no sandbox on this machine: {NO_SANDBOX}")
    assert_nothing_changed(runs[protection])


@pytest.mark.gpu
def test_on_the_gpu_under_the_active_protection(tmp_path):
    """The same on a GPU machine with the protection `auto` gives there; an honest sample still passes (CUDA works
    inside the sandbox: device nodes, driver libraries)."""
    chosen = guard.choose("auto")
    run = through_the_cli(tmp_path, "auto", "cuda", after=(WRONG_SHAPE, "tests/samples/reference_call.py"))
    assert_each_failed_with_its_reason(run, chosen.kind)
    wait_past(run["ended"], 10.5)
    assert_nothing_changed(run)
    honest = records_by_name(run["after"])["reference_call"]
    assert honest["status"] == "pass" and honest["protection"] == chosen.label, honest["reason"]
    print(f"protection on this GPU machine: {chosen.describe()}")


def test_off_is_said_in_the_header_and_the_record(tmp_path):
    """--protection off (for timing comparisons) is printed first and kept in the record; a skipped run costs no
    worker, so this is quick: a ROCm-only submission on the CPU."""
    env = {**os.environ, "HARNESS_RESULTS": str(tmp_path / "results")}
    done = subprocess.run([*HARNESS, "run",
                           "120", "--device", "cpu", "--protection", "off", "--json"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.stderr.splitlines()[0].startswith("protection: off (--protection off: nothing keeps"), done.stderr
    assert [record["protection"] for record in json.loads(done.stdout)] == ["off"]


# ------------------------------------------------------------------ the parts

def test_bwraps_command_is_read_only_but_for_scratch_and_the_gpu_nodes(tmp_path, monkeypatch):
    node = tmp_path / "nvidia0"
    node.write_text("")
    monkeypatch.setattr(bwrap, "DEVICE_PATTERNS", (str(tmp_path / "nvidia*"),))
    line = bwrap.command(["python", "-c", "pass"], "/scratch", "/scratch/work", "/usr/bin/bwrap")
    text = " ".join(line)
    assert line[:5] == ["/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev"]
    assert f"--dev-bind {node} {node}" in text and "--bind /scratch /scratch" in text
    assert "--unshare-all" in line and "--die-with-parent" in line and "--share-net" not in line
    assert line[line.index("--") + 1:] == ["python", "-c", "pass"]
    assert bwrap.returncode(128 + 11) == -11 and bwrap.returncode(3) == 3


@pytest.mark.parametrize("kind", ["sandbox", "files"])
def test_the_child_reads_the_installed_bytecode_and_writes_none(tmp_path, kind):
    """An empty bytecode folder per run made every child compile torch again (~4 s of CPU each, issue 37)."""
    if kind == "sandbox" and NO_SANDBOX:
        pytest.skip(f"no sandbox on this machine: {NO_SANDBOX}")
    jail = guard.Jail(kind, tmp_path)
    program = "import json, sys; print(sys.pycache_prefix, sys.dont_write_bytecode, json.__cached__)"
    argv, env, cwd = jail.wrap([sys.executable, "-c", program], dict(os.environ))
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    prefix, no_writes, cached = done.stdout.split()
    assert (prefix, no_writes) == ("None", "True"), done.stdout + done.stderr
    assert Path(cached).is_file() and str(tmp_path) not in cached  # the installed .pyc, not one in the scratch


@pytest.mark.skipif(bool(NO_SANDBOX), reason=f"no sandbox on this machine: {NO_SANDBOX}")
def test_inside_bwrap_only_scratch_is_writable_there_is_no_network_and_nothing_outlives_it(tmp_path):
    """Without the harness's own hooks: the sandbox itself refuses the write and the connection, and its PID
    namespace takes a setsid() background process with it."""
    scratch, outside = tmp_path / "scratch", tmp_path / "outside.txt"
    scratch.mkdir()
    outside.write_text("as it was")
    program = f"""
import errno, os, socket, subprocess, sys, time
open({str(scratch / 'ok.txt')!r}, 'w').write('fine')
try:
    open({str(outside)!r}, 'w')
except OSError as e:
    print('write', errno.errorcode[e.errno])
try:
    socket.create_connection(('192.0.2.1', 80), timeout=3)
except OSError as e:
    print('connect', errno.errorcode.get(e.errno, e))
background = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)', '{GRANDCHILD_MARK}-bwrap'],
                              start_new_session=True)
time.sleep(0.3)
print('background', 'alive' if background.poll() is None else 'dead')
"""
    done = subprocess.run(bwrap.command([sys.executable, "-c", program], str(scratch), str(scratch)),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "write EROFS" in done.stdout and "connect ENETUNREACH" in done.stdout, done.stdout
    assert "background alive" in done.stdout
    assert (scratch / "ok.txt").read_text() == "fine" and outside.read_text() == "as it was"
    time.sleep(0.5)
    assert not [pid for pid in procs.table() if f"{GRANDCHILD_MARK}-bwrap" in procs.command_line(pid)]


def test_the_snapshot_puts_back_changed_deleted_and_new_files_keeping_uncommitted_edits(tmp_path, monkeypatch):
    monkeypatch.setattr(filecheck, "CONTENT_LIMIT", 1000)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "edited.py").write_text("an uncommitted edit\n")  # what git has is irrelevant: this is what comes back
    (tree / "gone.py").write_text("keep me\n")
    (tree / "big.pch").write_bytes(b"x" * 5000)
    snapshot = filecheck.Snapshot([filecheck.tree(tree)])
    (tree / "edited.py").write_text("def check_implementation(*a): return True, ''\n")
    (tree / "gone.py").unlink()
    (tree / "new.py").write_text("planted\n")
    with open(tree / "big.pch", "r+b") as file:  # same size, written in place
        file.write(b"y")
    changes = snapshot.changes()
    assert [(c.path.name, c.what) for c in changes] == [("big.pch", "changed"), ("edited.py", "changed"),
                                                        ("gone.py", "deleted"), ("new.py", "created")]
    assert snapshot.restore(changes, tmp_path / "aside") == []
    assert (tree / "edited.py").read_text() == "an uncommitted edit\n" and (tree / "gone.py").read_text() == "keep me\n"
    assert not (tree / "new.py").exists() and not (tree / "big.pch").exists()  # a large cache file is rebuilt
    assert (tmp_path / "aside" / str(tree / "new.py").lstrip("/")).read_text() == "planted\n"
    assert snapshot.changes() == [filecheck.Change(tree / "big.pch", "deleted")]


def test_a_setsid_grandchild_is_found_below_its_subreaper_and_killed():
    program = f"""
import subprocess, sys, time
from harness.sandbox import procs
procs.become_subreaper()
start = 'import subprocess, sys; subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "{GRANDCHILD_MARK}-unit"], start_new_session=True)'
middle = subprocess.Popen([sys.executable, '-c', start])
middle.wait()
time.sleep(0.3)
print(procs.left_the_session())
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert "time.sleep(30) hostile-setsid" in done.stdout, done.stdout + done.stderr  # the command line, cut at 80
    time.sleep(0.2)
    assert not [pid for pid in procs.table() if f"{GRANDCHILD_MARK}-unit" in procs.command_line(pid)]


def test_the_protection_is_the_sandbox_where_it_starts_else_the_file_checks(monkeypatch):
    assert guard.choose("off").label == "off" and guard.choose("files").label == "fallback: file checks"
    monkeypatch.setattr(bwrap, "why_not", lambda: "no bwrap on PATH: install bubblewrap")
    chosen = guard.choose("auto")
    assert chosen.kind == "files" and chosen.describe() == "fallback: file checks (no bwrap on PATH: install bubblewrap)"
    with pytest.raises(guard.ProtectionError, match="--protection sandbox: no bwrap on PATH"):
        guard.choose("sandbox")
    monkeypatch.setattr(bwrap, "why_not", lambda: "")
    assert guard.choose("auto").describe() == "sandbox (bwrap)"


def test_the_fallback_puts_back_a_forged_ledger_and_ends_what_the_run_left(tmp_path):
    """The parent side of the fallback on its own: a forged ledger line and a detached process, after the run."""
    ledger.append({"run_id": "honest"})
    with guard.Watch(guard.Protection("files", "test"), aside=tmp_path / "aside") as watch:
        with open(paths.ledger_file(), "a") as file:
            file.write(json.dumps({"run_id": FORGED_MARK, "status": "pass"}) + "\n")
        subprocess.Popen(["sleep", "30"], start_new_session=True)
        problems = watch.problems()
    assert problems[0].startswith("left 1 process(es) running after the run (killed), first ")
    assert any(line.startswith(f"tampered with {paths.in_repository(paths.ledger_file())} on disk (changed")
               for line in problems), problems
    assert [record["run_id"] for record in ledger.read()] == ["honest"]


def test_doctor_names_the_protection():
    done = subprocess.run([sys.executable, "-c", "from harness.cli import main; main()", "doctor", "--device", "cpu"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    expected = "sandbox (bwrap)" if not NO_SANDBOX else "fallback: file checks ("
    assert f"protection of runs: {expected}" in done.stdout, done.stdout


def test_setup_installs_bwrap_only_where_it_can_and_never_fails(monkeypatch, capsys):
    monkeypatch.setattr(bwrap, "executable", lambda: None)
    monkeypatch.setattr(bwrap.shutil, "which", lambda name: None)
    assert bwrap.install(say=lambda line: None).startswith("bubblewrap: no apt-get on this machine")
    monkeypatch.setattr(bwrap.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(bwrap.os, "geteuid", lambda: 1000)
    assert bwrap.install(say=lambda line: None) == "bubblewrap: not root; run `sudo apt-get install -y bubblewrap`"
    monkeypatch.setattr(bwrap, "why_not", lambda: "no bwrap on PATH")
    assert bwrap.main(["bwrap", "setup"]) == 0
    assert capsys.readouterr().out.splitlines() == ["note: bubblewrap: not root; run `sudo apt-get install -y "
                                                    "bubblewrap`", "sandbox: no bwrap on PATH"]


def test_scratch_left_by_a_killed_harness_goes_at_the_next_run(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    orphan, mine = tmp_path / f"harness-run-{dead.stdout.strip()}-abc", tmp_path / f"harness-run-{os.getpid()}-def"
    for folder in (orphan, mine):
        (folder / "home").mkdir(parents=True)
    guard.remove_orphaned_scratch(tmp_path)
    assert not orphan.exists() and mine.exists()
