"""The processes below a given one, read from /proc: used by the parent after a run and by the child after a call.

A grandchild that calls setsid() leaves its process group and session, so killing the group misses it; it still
hangs below the nearest subreaper (PR_SET_CHILD_SUBREAPER), which is how both sides find it. Linux only; elsewhere
every function finds nothing.
"""
import ctypes
import os
import signal
import time

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Orphans of this process's descendants are re-parented here instead of to init, so they can be found."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def table() -> dict:
    """pid -> (parent pid, session id, state) of every process this one can see."""
    found = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                text = stat.read().decode("utf-8", "replace")
        except OSError:
            continue
        fields = text[text.rfind(")") + 2:].split()  # the command name in parentheses may hold spaces
        found[int(name)] = (int(fields[1]), int(fields[3]), fields[0])
    return found


def descendants(root: int, processes: dict | None = None) -> list[int]:
    """Every live process below `root` (zombies left out), parents before their children."""
    processes = table() if processes is None else processes
    children = {}
    for pid, (parent, _, state) in processes.items():
        if state != "Z":
            children.setdefault(parent, []).append(pid)
    found, todo = [], list(children.get(root, ()))
    while todo:
        pid = todo.pop(0)
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return cmdline.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def kill(pids: list[int]) -> None:
    """SIGKILL each, then reap those that are our own children (orphans re-parented to a subreaper are)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for pid in pids:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def reap_orphans(root: int, spare: set) -> None:
    """Collect the exit status of zombies re-parented to `root` (a subreaper must, or they stay in the table)."""
    for pid, (parent, _, state) in table().items():
        if parent == root and state == "Z" and pid not in spare:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def kill_all_below(root: int, spare: set = frozenset(), rounds: int = 20, settle_s: float = 1.0) -> dict[int, str]:
    """Kill every descendant of `root` not in `spare` until none is left (a forking one may add more); pid -> command.

    Processes of a PID namespace that just ended are still dying for a moment: they get `settle_s` to go by themselves.
    """
    killed = {}
    deadline = time.monotonic() + settle_s
    while time.monotonic() < deadline and any(pid not in spare for pid in descendants(root)):
        reap_orphans(root, spare)
        time.sleep(0.05)
    for _ in range(rounds):
        reap_orphans(root, spare)
        left = [pid for pid in descendants(root) if pid not in spare]
        if not left:
            break
        killed.update({pid: command_line(pid) for pid in left})
        kill(left)
        time.sleep(0.01)
    return killed


def left_the_session() -> list[str]:
    """Kill the processes below this one that left its session (setsid) and so would outlive it; 'pid command' each."""
    me, processes = os.getpid(), table()
    session = os.getsid(0)
    escaped = [pid for pid in descendants(me, processes) if processes[pid][1] != session]
    shown = [f"{pid} {command_line(pid)[:80]}".strip() for pid in escaped]
    kill(escaped)
    return shown
