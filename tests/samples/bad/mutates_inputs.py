#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: zeroes its query and KV cache in place, then computes honestly on what is left.

If the harness handed it the very tensors the check uses, the check would compare against the
mutated input and pass. The harness passes a clone, so the reference sees the originals.
Expected: fail, mismatched elements.
"""
from reference import ref_kernel
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    q.zero_()
    kv_data["fp8"][0].zero_()
    kv_data["bf16"].zero_()
    return ref_kernel(data)
