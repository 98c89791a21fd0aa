#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: a cheat that caches its first output per input shape. Benchmark mode reuses one input
# per case, so it passes there; leaderboard mode feeds fresh input to every call, so it must fail.
from task import input_t, output_t
from reference import ref_kernel

_outputs = {}


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    key = (tuple(q.shape), config["kv_seq_len"])
    if key not in _outputs:
        _outputs[key] = ref_kernel(data)
    return _outputs[key]
