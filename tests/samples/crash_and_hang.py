#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# Test sample: dies of SIGSEGV when batchsize is 2, hangs when it is 3, and is correct otherwise.
import os
import signal
import time

from task import input_t, output_t
from reference import ref_kernel


def custom_kernel(data: input_t) -> output_t:
    batch = data[4]["batch_size"]
    if batch == 2:
        os.kill(os.getpid(), signal.SIGSEGV)
    if batch == 3:
        time.sleep(3600)
    return ref_kernel(data)
