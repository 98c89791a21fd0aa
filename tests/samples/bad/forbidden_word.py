#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: correct, but mentions the word the server rejects (in a comment, below).

It runs locally; the run's warnings carry lint's finding that the server would reject the file.
Expected: pass, with the warning "FORBIDDEN_WORD".
"""
from reference import ref_kernel
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    # All work is on the default stream, so nothing to synchronize here.
    return ref_kernel(data)
