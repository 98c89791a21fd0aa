"""The bubblewrap sandbox (https://github.com/containers/bubblewrap, Debian package `bubblewrap`) around the child.

Inside it the whole filesystem is a read-only view of the host's, except the run's scratch folder and the GPU
device nodes; it has its own user, PID, network, IPC and UTS namespaces, so there is no network and the PID
namespace (with every grandchild in it) ends with the worker. The host's driver libraries come with the
read-only `/`, which is what CUDA and ROCm need beside their device nodes.
"""
import functools
import glob
import os
import shutil
import signal
import subprocess
import sys

PROBE_TIMEOUT_S = 20.0
# GPU device nodes the child must open: NVIDIA's (nvidia0, nvidiactl, nvidia-uvm, nvidia-caps/) and AMD's (kfd, dri/).
DEVICE_PATTERNS = ("/dev/nvidia*", "/dev/nvidia-caps", "/dev/kfd", "/dev/dri")
HOW_TO_GET = "install bubblewrap (`apt-get install bubblewrap`; `make setup` does it where it can)"


def executable() -> str | None:
    return shutil.which("bwrap")


def device_nodes() -> list[str]:
    return sorted({path for pattern in DEVICE_PATTERNS for path in glob.glob(pattern)})


def command(argv: list[str], scratch: str, cwd: str, bwrap: str = "bwrap") -> list[str]:
    """bwrap's command line that runs argv read-only but for `scratch`, offline, in namespaces that end with it."""
    line = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/dev/shm"]
    for node in device_nodes():
        line += ["--dev-bind", node, node]
    line += ["--bind", scratch, scratch, "--unshare-all", "--die-with-parent", "--new-session", "--chdir", cwd, "--"]
    return line + list(argv)


def returncode(code: int) -> int:
    """bwrap exits 128+N when the command died of signal N; as Popen would say it unsandboxed (-N)."""
    if code > 128 and code - 128 in signal.valid_signals():
        return -(code - 128)
    return code


@functools.lru_cache(maxsize=1)
def why_not() -> str:
    """'' when a bwrap sandbox starts on this machine, else one line saying why not (tried once per process)."""
    found = executable()
    if found is None:
        return f"no bwrap on PATH: {HOW_TO_GET}"
    try:
        trial = subprocess.run(command(["true"], "/tmp", "/", found), capture_output=True, text=True,
                               timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as error:
        return f"bwrap did not start: {error}"
    if trial.returncode != 0:
        last = (trial.stderr.strip().splitlines() or [f"exit code {trial.returncode}"])[-1]
        return f"bwrap cannot start a sandbox here (user namespaces unavailable?): {last}"
    return ""


def version() -> str:
    found = executable()
    if not found:
        return ""
    try:
        return subprocess.run([found, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def install(say=print) -> str | None:
    """apt-get install bubblewrap where it is missing and this is root with apt; None when done, else what to do."""
    if executable():
        return None
    if not shutil.which("apt-get"):
        return f"bubblewrap: no apt-get on this machine; {HOW_TO_GET}"
    if os.geteuid() != 0:
        return "bubblewrap: not root; run `sudo apt-get install -y bubblewrap`"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for step in (["apt-get", "install", "-y", "-q", "bubblewrap"], ["apt-get", "update", "-q"],
                 ["apt-get", "install", "-y", "-q", "bubblewrap"]):
        say(" ".join(step))
        done = subprocess.run(step, capture_output=True, text=True, env=env)
        if step[1] == "install" and done.returncode == 0 and executable():
            return None
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return f"bubblewrap: apt-get install failed ({last}); runs use the fallback's file checks"


def main(argv: list[str]) -> int:
    """`python -m harness.sandbox.bwrap setup`: install bwrap where it can and say what protection runs get; exit 0."""
    if argv[1:] != ["setup"]:
        print("usage: python -m harness.sandbox.bwrap setup")
        return 2
    missing = install()
    if missing:
        print(f"note: {missing}")
    problem = why_not()
    print(f"sandbox: {'bwrap starts here: runs are sandboxed' if not problem else problem}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
