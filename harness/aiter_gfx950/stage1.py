"""aiter's MLA stage-1 asm kernels from the wheel's code objects, run on the gfx950 emulator.

run() takes mla_decode_stage1_asm_fwd's arguments (the stand-in has
checked them and picked the kernel) and launches that kernel as the
wheel's asm_mla.cu does: its argument block (kernargs.py), grid
(q tiles x batch x splits; persistent: one workgroup per work_indptr
slot) and 256 threads. The persistent kernels read their schedule
through STP: the caller's work_meta_data, else a 10-entry block
[work_indptr, work_info_set, 0 ...] as the host code allocates.
An LDS race stops the launch with both instructions named (races.py):
found on the C fast path, it is run again on numpy in lockstep to name them.
"""
import dataclasses
import functools
import time

import torch

from harness.aiter_gfx950 import kernargs, package, races
from harness.emulator.code_object import load_code_object
from harness.emulator.errors import EmulationFault
from harness.emulator.launch import WAVE_QUANTUM, HostMemory, run_kernel

MARK = "gfx950 emulated (CPU): correctness only"
QUANTUM = 1  # waves in lockstep, to name a race's two instructions
# a let-through race's output needs waves that keep pace: a8w8 _ps at 4 and 8 is bit-identical to
# lockstep (4 x 1024, 8 x 2048) in a quarter of the CPU; at 64 it is wrong (max diff 231)
LET_THROUGH_QUANTUM = 4
# Without a race the output cannot depend on the order of waves, and the checker flags a race
# whatever the order (two waves on one byte between two barriers): race-free kernels run free.
FREE_QUANTUM = WAVE_QUANTUM


@dataclasses.dataclass
class Launch:
    """One emulated stage-1 launch: what ran, on what grid, for how long."""
    kernel: str
    grid: tuple
    seconds: float
    counts: object
    windows: list  # LDS races let through, both instructions named


def covered(kernel: str) -> bool:
    """Whether `kernel` (the stand-in's pick) is one this package emulates."""
    return kernel in package.pinned()["code_objects"]


@functools.lru_cache(maxsize=None)
def _code(kernel: str):
    return load_code_object(package.code_object_path(kernel).read_bytes())


def _memory(tensors: dict) -> HostMemory:
    memory = HostMemory()
    for name, tensor in tensors.items():
        if tensor is not None:
            memory.add_tensor(tensor, name)
    return memory


def run(kernel: str, Q, KV, qo_indptr, kv_indptr, kv_page_indices, kv_last_page_lens,
        num_kv_splits_indptr, work_meta_data, work_indptr, work_info_set, max_seqlen_q,
        softmax_scale, splitData, splitLse, output, q_scale=None, kv_scale=None,
        let_through: str | None = None, **launch_options) -> Launch:
    """Launch `kernel` on the emulator; the results land in the caller's tensors. An LDS race
    stops it, unless `let_through` says why not (the pairs are then in Launch.windows).
    launch_options go to run_kernel as they are (the timing model's traces ask through them)."""
    entry = package.pinned()["code_objects"][kernel]
    persistent = num_kv_splits_indptr is None
    tensors = {"Q": Q, "KV": KV, "qo_indptr": qo_indptr, "kv_indptr": kv_indptr,
               "kv_page_indices": kv_page_indices, "kv_last_page_lens": kv_last_page_lens,
               "num_kv_splits_indptr": num_kv_splits_indptr, "work_meta_data": work_meta_data,
               "work_indptr": work_indptr, "work_info_set": work_info_set, "splitData": splitData,
               "splitLse": splitLse, "output": output, "q_scale": q_scale, "kv_scale": kv_scale}
    work_groups = None
    if persistent:
        work_groups = work_indptr.shape[0] - 1
        if work_meta_data is None:  # asm_mla.cu's own block of the two pointers
            work_meta_data = torch.zeros(kernargs.PS_META_ENTRIES, dtype=torch.int64)
            work_meta_data[0], work_meta_data[1] = work_indptr.data_ptr(), work_info_set.data_ptr()
            tensors["ps_meta_data"] = work_meta_data
        steering = work_meta_data.data_ptr()
    else:
        steering = num_kv_splits_indptr.data_ptr()
    fields = kernargs.values(Q, KV, qo_indptr, kv_indptr, kv_page_indices, kv_last_page_lens,
                             steering, max_seqlen_q, softmax_scale, splitData, splitLse, output,
                             q_scale, kv_scale)
    grid = kernargs.grid(entry["sub_q"], Q.shape[1] // KV.shape[2], max_seqlen_q,
                         qo_indptr.shape[0] - 1, splitData.shape[1], work_groups)
    def launch(native: bool, quantum: int):
        with races.named_pairs(let_through) as windows:
            counts = run_kernel(_code(kernel), entry["symbol"], grid, kernargs.BLOCK, kernargs.pack(fields),
                                memory=_memory(tensors), quantum=quantum, native=native, **launch_options)
        return counts, windows

    started = time.perf_counter()
    # the C path, 4 x 1024 in CPU s: a16w16 1.8 free (numpy lockstep 7.7), a8w8 _ps 0.9 (5.9)
    try:
        counts, windows = launch(True, LET_THROUGH_QUANTUM if let_through else FREE_QUANTUM)
    except EmulationFault as fault:
        if fault.kind != "lds race":
            raise
        launch(False, QUANTUM)  # again on numpy in lockstep: only it keeps the other instruction's offset
        raise
    return Launch(kernel, grid, time.perf_counter() - started, counts, windows)
