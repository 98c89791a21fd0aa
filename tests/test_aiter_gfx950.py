"""aiter's own gfx950 MLA kernels on the emulator (harness/aiter_gfx950/, issue 38).

Each emulated kernel is checked against the torch stand-in on the same
inputs under the official tolerance; the non-persistent a8w8 kernel's
LDS race stops the call, naming the kernel and the racing instruction.
The pinned wheel must be unpacked (`make setup`).
"""
import hashlib
import importlib.util
import struct
from pathlib import Path

import pytest
import torch

import reference
from harness import platform as platforms
from harness import submission as subs
from harness.aiter_gfx950 import kernargs, package, routing
from harness.aiter_standin import decode
from harness.emulator.errors import EmulationFault
from harness.run import cases, protocol

A8W8 = "mla_a8w8_qh16_qseqlen1_gqaratio16"
TOOL = Path(__file__).resolve().parent.parent / "bench" / "tools" / "aiter_a8w8_race.py"


def test_the_unpacked_code_objects_are_the_pinned_ones():
    """code_objects.json's sha256 are the unpacked wheel's files; 'differs' says whether the pin's differ."""
    objects = package.pinned()["code_objects"]
    assert set(objects) == {A8W8, f"{A8W8}_ps", "mla_dec_stage1_bf16_a16w16_subQ16_mqa16",
                            "mla_a16w8_qh16_m16x4_n16x1_coex0_mask1_ps"}
    for name, entry in objects.items():
        data = package.code_object_path(name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["package"]["sha256"], name
        assert entry["differs_from_pin"] == (entry["package"]["sha256"] != entry["pin"]["sha256"]), name
        assert entry["pin"]["commit"].startswith("f3be04a12a") and entry["pin"]["repository"] == "ROCm/aiter"
    assert [n for n, e in objects.items() if e["differs_from_pin"]] == [f"{A8W8}_ps"]


def test_a_changed_code_object_is_refused(tmp_path, monkeypatch):
    """A cache whose .co does not hash to the pin is named, not run."""
    name = "mla_dec_stage1_bf16_a16w16_subQ16_mqa16"
    entry = package.pinned()["code_objects"][name]
    target = tmp_path / entry["package"]["path"]
    target.parent.mkdir(parents=True)
    target.write_bytes(package.code_object_path(name).read_bytes() + b"\0")
    (tmp_path / ".complete").write_text(package._stamp())
    monkeypatch.setenv("HARNESS_AITER_CACHE", str(tmp_path))
    with pytest.raises(package.PackageMissing, match="sha256"):
        package.code_object_path(name)


def test_the_argument_block_puts_field_k_at_16k():
    """asm_mla.cu's packed KernelArgs: pointers and 32-bit scalars each padded to 16 bytes."""
    block = kernargs.pack({"R": 0x1122334455667788, "scalar": 0.5, "s_kv_split": 8, "out_16_nosplit": 8})
    assert len(block) == 16 * 19 == 304
    assert struct.unpack_from("<Q", block, 0)[0] == 0x1122334455667788
    assert struct.unpack_from("<f", block, 16 * 7)[0] == 0.5
    assert struct.unpack_from("<I", block, 16 * 9)[0] == 8 and struct.unpack_from("<I", block, 16 * 18)[0] == 8
    assert kernargs.grid(128, 16, 1, 3, 8, None) == (1, 3, 8)
    assert kernargs.grid(128, 16, 1, 3, 1, 256) == (256, 1, 1)


@pytest.mark.parametrize("env, expected", [
    ({"MLA_DEVICE": "cpu"}, "emulate"),
    ({"MLA_DEVICE": "cuda"}, "torch"),
    ({"MLA_DEVICE": "cuda", "HARNESS_EMULATE_GFX950": "1"}, "emulate"),
    ({"MLA_DEVICE": "cpu", "HARNESS_AITER": "torch"}, "torch"),
])
def test_routing_emulates_where_there_is_no_gpu(monkeypatch, env, expected):
    for name in ("MLA_DEVICE", "HARNESS_EMULATE_GFX950", "HARNESS_AITER"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert routing.mode() == expected


def test_without_the_wheel_a_cpu_call_is_modelled_and_says_why(monkeypatch, tmp_path):
    monkeypatch.setenv("MLA_DEVICE", "cpu")
    monkeypatch.delenv("HARNESS_AITER", raising=False)
    monkeypatch.setenv("HARNESS_AITER_CACHE", str(tmp_path))
    routing.take_lines()
    assert not routing.emulates(A8W8)
    lines = routing.take_lines()
    assert lines[0].startswith(f"aiter modelled in torch") and "make setup" in lines[0], lines


def test_a_gpu_call_says_it_is_modelled_and_an_unemulated_kernel_says_not_covered(monkeypatch):
    monkeypatch.delenv("HARNESS_AITER", raising=False)
    monkeypatch.delenv("HARNESS_EMULATE_GFX950", raising=False)
    monkeypatch.setenv("MLA_DEVICE", "cuda")
    routing.take_lines()
    assert not routing.emulates(A8W8)
    assert routing.take_lines() == [f"aiter modelled in torch (the harness's stand-in: correctness only): {A8W8} "
                                    "(a GPU child; --device gfx950 runs aiter's gfx950 code objects on the emulator)"]
    monkeypatch.setenv("MLA_DEVICE", "cpu")
    assert not routing.emulates("mla_a8w8_qh16_qseqlen2_gqaratio16")  # q length 2: no code object emulated
    assert routing.take_lines() == ["not covered: mla_a8w8_qh16_qseqlen2_gqaratio16 (no code object of it is "
                                    "emulated; aiter modelled in torch)"]


def _inputs(batch: int, kv: int, variant: str, persistent: bool, seed: int = 3) -> dict:
    """mla_decode_fwd's arguments for one of the emulated kernels, as the bench tool builds them (2 splits)."""
    spec = importlib.util.spec_from_file_location("aiter_a8w8_race", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool.decode_arguments(batch, kv, seed, variant, persistent, 2 if persistent else None)


def _decode(monkeypatch, how: str, args: dict) -> tuple[torch.Tensor, list]:
    monkeypatch.setenv("HARNESS_AITER", how)
    routing.take_lines()
    out = torch.zeros(args["q"].shape[0], 16, 512, dtype=torch.bfloat16)
    decode.mla_decode_fwd(o=out, **args)
    return out, routing.take_lines()


def _same_as_torch(monkeypatch, batch, kv, variant, persistent, kernel):
    args = _inputs(batch, kv, variant, persistent)
    emulated, said = _decode(monkeypatch, "emulate", args)
    modelled, _ = _decode(monkeypatch, "torch", args)
    close = torch.isclose(emulated.float(), modelled.float(), rtol=reference.RTOL, atol=reference.ATOL)
    assert float((~close).float().mean()) <= reference.MISMATCH_RATIO_LIMIT
    assert float((emulated.float() - modelled.float()).abs().max()) < 0.02  # the kernels' own rounding only
    assert said[0].startswith(f"aiter emulated (gfx950; amd-aiter {package.version()} code objects; {kernel})")
    return said


@pytest.mark.slow
def test_the_a16w16_kernel_matches_the_torch_stand_in(monkeypatch):
    """Non-persistent bf16, splits merged by the stand-in's stage 2 (4 s of CPU, 8-14 s loaded)."""
    said = _same_as_torch(monkeypatch, 2, 256, "a16w16", False, "mla_dec_stage1_bf16_a16w16_subQ16_mqa16")
    assert "(as at the runner's pin)" in said[0]


@pytest.mark.slow
def test_the_persistent_a8w8_kernel_matches_the_torch_stand_in(monkeypatch):
    """The wheel's _ps build (it differs from the pin's) on the stand-in's schedule, 2 splits (10-20 s)."""
    said = _same_as_torch(monkeypatch, 2, 300, "a8w8", True, f"{A8W8}_ps")
    assert "differs from the runner's pin f3be04a12a" in said[0]
    assert any(line.startswith(f"LDS races let through in {A8W8}_ps") for line in said), said


@pytest.mark.slow
def test_the_persistent_a16w8_kernel_matches_the_torch_stand_in(monkeypatch):
    _same_as_torch(monkeypatch, 2, 256, "a16w8", True, "mla_a16w8_qh16_m16x4_n16x1_coex0_mask1_ps")


def test_the_nonpersistent_a8w8_kernel_stops_at_its_lds_race(monkeypatch):
    """Two splits of fp8 Q and KV: the call fails naming the kernel, both instructions of the race and the
    schedule assumed (about 2 s)."""
    args = _inputs(1, 256, "a8w8", False)
    with pytest.raises(EmulationFault) as stopped:
        _decode(monkeypatch, "emulate", dict(args, num_kv_splits=2,
                                             num_kv_splits_indptr=torch.tensor([0, 2], dtype=torch.int32)))
    text = str(stopped.value)
    assert stopped.value.kind == "lds race" and f"aiter's {A8W8}.co" in text
    assert "_ZN5aiter33mla_a8w8_qh16_qseqlen1_gqaratio16E" in text
    assert "last by ds_read_b64 at 0x4ba4" in text and "- ds_write_b32 at 0x4c9c" in text  # both of the pair
    assert "schedule assumed" in text and "LDS-DMA" in text


SAMPLES = Path(__file__).resolve().parent / "samples" / "aiter"
SMALL = [{"batchsize": 2, "qseqlen": 1, "kvseqlen": 300, "seed": 5}]


def _run_on_the_cpu(tmp_path, monkeypatch, path: Path, how: str):
    monkeypatch.setenv("HARNESS_AITER", how)
    return protocol.evaluate(subs.from_path(path), platforms.detect("cpu"), "test", SMALL, cases_name="test",
                             flush="fast", timeout_s=600.0, log_dir=tmp_path)


@pytest.mark.slow
def test_a_nonpersistent_a8w8_wrapper_fails_on_its_race_and_the_persistent_one_passes(tmp_path, monkeypatch):
    """tests/samples/aiter/gfx950: 8 splits of fp8 Q and KV; 30-70 s each on the 2-core machine."""
    racing = _run_on_the_cpu(tmp_path, monkeypatch, SAMPLES / "gfx950" / "nonpersistent_a8w8_splits.py", "emulate")
    assert racing.status == "fail" and f"lds race: aiter's {A8W8}.co" in racing.results[0].message
    persistent = _run_on_the_cpu(tmp_path, monkeypatch, SAMPLES / "gfx950" / "persistent_a8w8_splits.py", "emulate")
    assert persistent.status == "pass", persistent.reason
    assert any(f"aiter emulated (gfx950; amd-aiter {package.version()} code objects; {A8W8}_ps)" in w
               for w in persistent.warnings), persistent.warnings


@pytest.mark.slow
def test_a_standin_sample_on_the_racing_kernel_changes_verdict_when_emulated(tmp_path, monkeypatch):
    """Why the stand-in corpus runs with HARNESS_AITER=torch: its fp8 non-persistent samples (fixed_q_amax,
    every_2nd_kv, q_cache_data_ptr, cuda_graph_replay) take the racing kernel, so emulated they fail on the
    race before their own hack is judged; modelled in torch they pass and say the ranked-mode risk."""
    path = SAMPLES / "standin" / "fixed_q_amax.py"
    modelled = _run_on_the_cpu(tmp_path, monkeypatch, path, "torch")
    assert modelled.status == "pass" and any("ranked-mode risk" in w for w in modelled.warnings)
    emulated = _run_on_the_cpu(tmp_path, monkeypatch, path, "emulate")
    assert emulated.status == "fail" and "lds race" in emulated.results[0].message


@pytest.mark.slow
def test_014_passes_its_small_cases_with_aiters_kernel_emulated(tmp_path, monkeypatch):
    """Issue 38's acceptance: `harness run 014 --cases small` on a CPU (75 s wall, 16 s of CPU, loaded)."""
    monkeypatch.delenv("HARNESS_AITER", raising=False)
    path = Path(__file__).resolve().parent.parent / "submissions" / "014_aiter_persistent.py"
    run = protocol.evaluate(subs.from_path(path), platforms.detect("cpu"), "test",
                            cases.load("small", "test", gpu=False), cases_name="small", flush="fast",
                            timeout_s=900.0, log_dir=tmp_path)
    assert run.status == "pass", run.reason
    kernel = "mla_dec_stage1_bf16_a16w16_subQ16_mqa16"
    digest = package.pinned()["code_objects"][kernel]["package"]["sha256"][:16]
    named = [w for w in protocol.record(run)["warnings"] if w.split(": ", 1)[-1].startswith("aiter emulated")]
    assert len(named) == len(run.results) and all(f"{kernel}.co sha256 {digest}" in w for w in named), named
