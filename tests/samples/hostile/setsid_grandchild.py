# Hostile sample: starts a grandchild that calls setsid() (leaving the worker's process group and session) and
# rewrites task.py 5 s later, after the run has ended; the submission itself answers correctly.
# verdict sandbox: left its session (setsid)
# verdict files: left its session (setsid)
import os
import sys
from pathlib import Path

from reference import ref_kernel

MARK = "hostile-setsid-grandchild"  # in the grandchild's command line, so a test can look for it
LATER = ("import sys, time; time.sleep(5); "
         "open(sys.argv[1], 'a').write('\\nraise SystemExit(\"written after the run\")\\n')")

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        target = str(Path(__file__).resolve().parents[3] / "task.py")
        os.execv(sys.executable, [sys.executable, "-c", LATER, target, MARK])
    os._exit(0)
os.wait()


def custom_kernel(data):
    return ref_kernel(data)
