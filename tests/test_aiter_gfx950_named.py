"""Issue 38: every aiter call says what ran in the run's record: the quantizers
as "aiter modelled in torch", an uncovered name as "not covered", and
--device gfx950 on a GPU machine asks for aiter's own kernels."""
from pathlib import Path

import pytest
import torch

from harness import platform as platforms
from harness import submission as subs
from harness.aiter_gfx950 import routing
from harness.aiter_standin import metadata
from harness.aiter_standin.dtypes import fp8
from harness.run import protocol, worker

SAMPLES = Path(__file__).resolve().parent / "samples" / "aiter"
SMALL = [{"batchsize": 2, "qseqlen": 1, "kvseqlen": 96, "seed": 5}]
A16W16 = "mla_dec_stage1_bf16_a16w16_subQ16_mqa16"


def _record(tmp_path, path: Path) -> tuple:
    """The run and its ledger record, as `harness run FILE` on the CPU makes them."""
    run = protocol.evaluate(subs.from_path(path), platforms.detect("cpu"), "test", SMALL,
                            cases_name="test", flush="fast", timeout_s=120.0, log_dir=tmp_path)
    return run, protocol.record(run)


def test_the_quantizers_are_named_modelled_in_torch_in_the_record(tmp_path):
    run, record = _record(tmp_path, SAMPLES / "gfx950" / "quantizers_modelled.py")
    assert run.status == "pass", run.reason
    named = [w for w in record["warnings"] if "aiter modelled in torch: " in w]
    assert named, record["warnings"]
    assert "aiter.ops.triton.quant.dynamic_per_tensor_quant_fp8_i8" in named[0]
    assert "aiter.utility.fp4_utils.dynamic_mxfp4_quant" in named[0]


def test_an_uncovered_aiter_name_fails_saying_not_covered(tmp_path):
    run, record = _record(tmp_path, SAMPLES / "standin" / "uncovered_name.py")
    assert run.failed
    assert record["results"][0]["message"].startswith("not covered: aiter.mla.mla_prefill_fwd ")
    assert "not covered: aiter.mla.mla_prefill_fwd" in record["reason"]


def _fake_gpu(monkeypatch) -> None:
    monkeypatch.setattr(platforms, "_gpu_device_files", lambda: True)
    monkeypatch.setattr(platforms, "_gpu_arch", lambda: "sm_90")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=None: "NVIDIA H200")


def _child_routing(monkeypatch, device: str) -> str:
    """routing.mode() in the child `harness run --device DEVICE 014` starts here."""
    here = platforms.run_platform(device)
    aiter_file = subs.from_path(Path(__file__).resolve().parent.parent / "submissions"
                                / "014_aiter_persistent.py")
    emulator = (platforms.emulator_environment(aiter_file, here)
                if platforms.emulates(aiter_file, here) else None)
    env = worker.child_environment(here.torch_device, False, base={}, emulator=emulator)
    for name in ("MLA_DEVICE", "HARNESS_EMULATE_GFX950", routing.ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return routing.mode()


@pytest.mark.skipif(platforms.emulator_missing() is not None, reason="no gfx950 toolchain here")
def test_device_gfx950_on_a_gpu_machine_runs_aiters_kernels_and_auto_models_them(monkeypatch):
    _fake_gpu(monkeypatch)
    assert platforms.run_platform("auto").is_gpu  # the fake holds: torch sees a GPU
    assert _child_routing(monkeypatch, "gfx950") == "emulate"
    assert _child_routing(monkeypatch, "auto") == "torch"
    routing.take_lines()
    assert not routing.emulates(A16W16)
    buffers = [torch.zeros(shape, dtype=dtype) for shape, dtype in
               metadata.get_mla_metadata_info_v1(2, 1, 16, fp8, fp8, False)]
    metadata.get_mla_metadata_v1(torch.arange(3, dtype=torch.int32), torch.tensor([0, 40, 100], dtype=torch.int32),
                                 torch.ones(2, dtype=torch.int32), 16, 1, False, *buffers[:1], buffers[2],
                                 buffers[1], *buffers[3:], max_seqlen_qo=1, uni_seqlen_qo=1)
    said = routing.take_lines()
    assert said == [f"aiter modelled in torch (the harness's stand-in: correctness only): {A16W16}, "
                    "get_mla_metadata_v1 (a GPU child; --device gfx950 runs aiter's gfx950 code objects "
                    "on the emulator)"]
