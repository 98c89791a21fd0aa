#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: computes once per shape, then replays that output for every later call.

It passes test mode (one call per shape) and benchmark mode (the same input again), and must fail
leaderboard mode, where every timed call gets fresh input and is checked. Lint flags it too.
Expected (leaderboard mode): fail, mismatched elements on a timed call.
"""
from reference import ref_kernel
from task import input_t, output_t

_outputs = {}


def custom_kernel(data: input_t) -> output_t:
    key = tuple(data[0].shape)
    if key in _outputs:
        return _outputs[key]
    output = ref_kernel(data)
    _outputs[key] = output
    return output
