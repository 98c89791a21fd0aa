"""The harness's view of HIP on the gfx950 emulator: which platform emulates which file, how an emulated record
reads (never MI355X, never timed), and that a skipped case is no pass."""
import dataclasses
from pathlib import Path

from harness import platform as platforms
from harness import submission as subs
from harness.results import records
from harness.results import scoreboard
from harness.results.verification import verified_on_mi355x
from harness.run import protocol

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
CPU = platforms.Platform(backend="cpu", device_name="cpu (x86_64)", arch="cpu", versions={"triton": None})
EMULATING = dataclasses.replace(CPU, emulate_gfx950=True)
ROCM = platforms.Platform(backend="rocm", device_name="AMD Instinct MI355X", arch="gfx950", versions={},
                          emulate_gfx950=True)


def test_a_hip_file_is_emulated_only_where_asked_and_never_on_rocm():
    hip = subs.from_path(SAMPLES / "hip_inline.py")
    torch_only = subs.from_path(SAMPLES / "reference_call.py")
    assert platforms.emulates_hip(hip, EMULATING)
    assert not platforms.emulates_hip(hip, CPU) and not platforms.emulates_hip(hip, ROCM)
    assert not platforms.emulates_hip(torch_only, EMULATING)
    runnable, note = platforms.can_run(hip, EMULATING)
    assert runnable and platforms.EMULATOR_MARK in note and "not emulated" in note
    runnable, reason = platforms.can_run(hip, CPU)
    assert not runnable and reason.startswith("needs ROCm: HIP source compiled with load_inline for gfx950; "
                                              "this machine is cpu (x86_64); ")
    gfx942_only = dataclasses.replace(hip, hip_archs=frozenset({"gfx942"}))
    assert not platforms.emulates_hip(gfx942_only, EMULATING)
    shown = platforms.emulated(EMULATING).record_device()
    assert shown == {"name": platforms.EMULATOR_MARK, "arch": records.EMULATOR_ARCH, "backend": "cpu"}


def emulated_record(status="pass", mode="test", emulator=True):
    device = {"name": records.EMULATOR_MARK, "arch": records.EMULATOR_ARCH, "backend": "cpu"}
    raw = {"source": "local", "submission": {"number": 13, "path": "submissions/013_hip_mxfp4_fused.py",
                                             "sha256": "s13", "requirements": ["torch"], "optional": ["hip"],
                                             "numbered": True},
           "mode": mode, "cases": "small", "flush": "none", "device": device, "status": status, "reason": "",
           "results": [{"spec": {"batchsize": 1, "qseqlen": 1, "kvseqlen": 64, "seed": 11}, "status": status,
                        "message": "", "stats": {"runs": 3, "mean": 5e9, "std": 1.0, "err": 1.0, "best": 5e9,
                                                 "worst": 5e9} if mode == "benchmark" else None}],
           "started": "2026-12-01T20:00:00", "finished": "2026-12-01T20:01:00"}
    if emulator:
        raw["emulator"] = {"_Z6kernel": {"launches": 2, "seconds": 1.0, "counts": {"wave_instructions": 10}}}
    return records.checked(raw)


def test_an_emulated_record_is_correctness_only_and_never_mi355x():
    passed = emulated_record()
    assert records.emulated(passed) and not records.real_timings(passed)
    assert records.emulated(emulated_record(emulator=False))  # its device says so even without figures
    assert not verified_on_mi355x(passed, [passed])
    assert scoreboard.where_verified([passed])["013_hip_mxfp4_fused"] == {"gfx950 emulated (CPU)": "✓ (2026-12-01)"}
    timed = emulated_record(mode="benchmark")
    table, = scoreboard.build_tables([timed])
    assert table.rows == [] and table.emulated == ["013_hip_mxfp4_fused"]
    assert any(records.EMULATOR_MARK in note for note in table.notes)


def test_a_run_with_a_skipped_case_is_no_pass():
    done = protocol.CaseResult(spec={"batchsize": 1, "qseqlen": 1, "kvseqlen": 64, "seed": 1}, status="pass")
    skipped = dataclasses.replace(done, status="skip", message="not emulated: v_foo_b32 in k")
    status, reason = protocol.summarize([done, skipped])
    assert status == "skip" and reason.endswith("not emulated: v_foo_b32 in k")
    assert protocol.summarize([done, dataclasses.replace(done, status="fail", message="x"), skipped])[0] == "fail"


def test_the_parent_sums_emulated_counts_over_cases_but_keeps_a_launch_shape():
    from harness.emulator.counts import add_launches
    total: dict = {}
    for _ in range(3):  # one reply per case
        add_launches(total, {"k": {"launches": 1, "seconds": 0.5,
                                    "counts": {"wave_instructions": 100, "waves_per_workgroup": 4, "workgroups": 2}}})
    assert total["k"]["launches"] == 3 and total["k"]["counts"] == {
        "wave_instructions": 300, "waves_per_workgroup": 4, "workgroups": 6}
