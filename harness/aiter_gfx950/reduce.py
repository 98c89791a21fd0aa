"""mla_reduce_v1 as amd-aiter's own code computes it: the wheel's reduce.cu, emulated on gfx950.

build.py compiles the wheel's reduce.cu: its host code (checks, the
kernel's dispatch over heads / head size / LSE output, grid sizing)
for the CPU against our HIP runtime, kn_mla_reduce_v1 / _ps for
gfx950; the kernel runs on the emulator and writes the caller's
final_output (and final_lse) in place.
The signature is the runner's pin's (the stand-in's, with
max_seqlen_q); the wheel's reduce has no max_seqlen_q. Without a
reduce_final_map it takes each tile's q length from
reduce_partial_map[1] - reduce_partial_map[0], where the stand-in's
torch model uses max_seqlen_q.
"""
from harness.aiter_gfx950 import build

MODULE = "module_mla_reduce"


def mla_reduce_v1(partial_output, partial_lse, reduce_indptr, reduce_final_map, reduce_partial_map, max_seqlen_q,
                  final_output, final_lse=None) -> bool:
    """The wheel's reduce, in place; False where the module cannot be built here (noted; the caller runs its
    torch model). max_seqlen_q is not in the wheel: unused."""
    from harness.emulator import launch_hip
    module = build.load_or_note(MODULE, "mla_reduce_v1")
    if module is None:
        return False
    with build.emulated_call(partial_output=partial_output, partial_lse=partial_lse, reduce_indptr=reduce_indptr,
                             reduce_final_map=reduce_final_map, reduce_partial_map=reduce_partial_map,
                             final_output=final_output, final_lse=final_lse):
        launch_hip.checked(module.mla_reduce_v1)(partial_output, partial_lse, reduce_indptr, reduce_final_map,
                                                 reduce_partial_map, final_output, final_lse)
    build.note_ran("mla_reduce_v1 (reduce.cu)")
    return True
