"""device="cuda" in an emulated child (harness/emulator/cuda_on_cpu.py): tensors made on "cuda" live on the CPU,
torch.cuda answers as beside one MI355X, and nothing of it reaches a plain CPU run. The HIP sample that allocates at
import (tests/samples/hip_emulated/cuda_at_import.py) runs end to end in test_hip_samples' emulator_e2e test."""
import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from harness.emulator import cuda_on_cpu
from harness.run.worker import Worker

REPO = Path(__file__).resolve().parents[2]
HIP_SAMPLE = REPO / "tests" / "samples" / "hip_emulated" / "cuda_at_import.py"
CASE = {"batchsize": 1, "qseqlen": 1, "kvseqlen": 40, "seed": 11}

# A plain-torch file in the public style: a workspace on "cuda" at import, its output moved there.
TORCH_ON_CUDA = '''
import torch
from reference import ref_kernel

WORKSPACE = torch.zeros(64, device="cuda")


def custom_kernel(data):
    q = data[0]  # public files check their inputs are on the GPU
    assert q.is_cuda and q.device.type == "cuda" and not q.is_cpu, q.device
    torch.cuda.synchronize()
    return ref_kernel(data).cuda()
'''


@pytest.fixture
def emulated():
    cuda_on_cpu.install()
    try:
        yield
    finally:
        cuda_on_cpu.uninstall()


def test_tensors_made_on_cuda_live_on_the_cpu(emulated):
    made = [torch.empty(3, device="cuda"), torch.zeros(2, device=0), torch.ones(2).cuda(),
            torch.ones(2).to("cuda:0"), torch.ones(2).to(torch.device("cuda"), torch.float16),
            torch.tensor([1.0], device="cuda", pin_memory=True), torch.ones(1).new_zeros(2, device="cuda")]
    with torch.device("cuda"):
        made.append(torch.arange(4))
    assert [t.untyped_storage().device.type for t in made] == ["cpu"] * len(made)
    assert made[4].dtype == torch.float16


def test_tensors_on_the_emulated_gpu_answer_as_cuda_tensors(emulated):
    made = [torch.empty(3, device="cuda"), torch.arange(4)]  # the CPU's memory is the GPU's
    assert [(t.device, t.is_cuda, t.is_cpu, t.get_device()) for t in made] == [
        (torch.device("cuda", 0), True, False, 0)] * 2
    again = torch.zeros(2, device=made[0].device).to(made[1].device)
    assert again.untyped_storage().device.type == "cpu" and again.is_cuda
    assert torch.empty(1, device="meta").device.type == "meta"


def test_cuda_generators_and_seeds_draw_on_the_cpu(emulated):
    generator = torch.Generator(device="cuda")
    assert isinstance(generator, torch.Generator) and generator.device.type == "cpu"
    first = torch.randn(4, device="cuda", generator=generator.manual_seed(5))
    torch.cuda.manual_seed(5)
    assert torch.equal(first, torch.randn(4, generator=torch.Generator().manual_seed(5)))
    assert torch.equal(torch.randn(2, device="cuda"), torch.randn(2, generator=torch.Generator().manual_seed(5)))


def test_torch_cuda_answers_as_one_emulated_mi355x(emulated):
    properties = torch.cuda.get_device_properties(torch.cuda.current_device())
    assert torch.cuda.is_available() and torch.cuda.device_count() == 1
    assert properties.gcnArchName == "gfx950" and "emulated" in properties.name
    assert "emulated" in torch.cuda.get_device_name() and torch.version.hip
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.device(0), torch.cuda.stream(torch.cuda.Stream()):
        start.record()
        torch.cuda.current_stream().synchronize()
        end.record()
    torch.cuda.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0.0


def test_uninstall_leaves_torch_as_it_was():
    cuda_on_cpu.install()
    cuda_on_cpu.uninstall()
    assert not torch.cuda.is_available() and not torch.ones(1).is_cuda
    assert torch.ones(1).device.type == "cpu" and torch.Generator().device.type == "cpu"
    with pytest.raises((RuntimeError, AssertionError), match="not compiled with CUDA"):
        torch.empty(1, device="cuda")


def import_sample(name: str):
    spec = importlib.util.spec_from_file_location(name, HIP_SAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(REPO))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REPO))
    return module


def test_the_hip_sample_imports_only_on_the_emulated_gpu(emulated):
    sample = import_sample("cuda_at_import_emulated")
    assert sample.ARCH == "gfx950" and sample.WORKSPACE.untyped_storage().device.type == "cpu"
    cuda_on_cpu.uninstall()
    with pytest.raises((RuntimeError, AssertionError), match="not compiled with CUDA"):
        import_sample("cuda_at_import_plain")


def run_case(tmp_path: Path, emulator: dict | None) -> dict:
    path = tmp_path / "torch_on_cuda.py"
    path.write_text(TORCH_ON_CUDA)
    with Worker(path, "cpu", tmp_path / "worker.log", emulator=emulator) as worker:
        return worker.call("test", timeout_s=120, args=CASE, device="cpu")


def test_an_emulated_child_maps_cuda_to_its_cpu(tmp_path):
    # The Triton flag alone: the child maps "cuda" without building our HIP runtime.
    reply = run_case(tmp_path, {"HARNESS_EMULATE_TRITON": "1"})
    assert reply["ok"] and reply["result"]["good"], reply


def test_a_plain_cpu_child_still_refuses_cuda_in_plain_words(tmp_path):
    reply = run_case(tmp_path, None)
    assert not reply["ok"], reply
    assert reply["message"].startswith("this run is on the CPU, but the submission asks for a CUDA device")
    assert "while importing the submission" in reply["message"]
