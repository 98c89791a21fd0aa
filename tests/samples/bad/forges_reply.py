#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Bad submission: writes a fake "passed" reply straight onto the worker's result pipe.

The pipe's number is on the worker's command line. Every reply must echo a token the harness sent
with the request, which this forgery cannot know. Expected: error, "forged reply".
"""
import json
import os
import sys

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    pipe = int(sys.argv[sys.argv.index("--reply-fd") + 1])
    fake = {"ok": True, "result": {"good": True, "message": "", "notes": {}}}
    os.write(pipe, (json.dumps(fake) + "\n").encode())
    q = data[0]
    return q.new_zeros((q.shape[0], 16, 512))
