"""The sandbox as the child sees it: what it refuses, in words a user reads.

No internet socket may be opened (the sandbox has no network either; the audit hook names the attempt, and a hook
(PEP 578) cannot be removed once added); a write the sandbox's read-only filesystem refused names the file.
"""
import errno
import os
import socket
import sys

INTERNET = {socket.AF_INET, socket.AF_INET6}


class NetworkRefused(PermissionError):
    """A submission opened a network socket; the official runner gives it no network to reach."""


def _refuse_sockets(event: str, args: tuple) -> None:
    if event == "socket.__new__" and len(args) > 1 and args[1] in INTERNET:
        raise NetworkRefused(f"no network: the submission opened an internet socket ({socket.AddressFamily(args[1]).name});"
                             " submissions run offline")


def forbid_network() -> None:
    sys.addaudithook(_refuse_sockets)


def read_only_write(exc: BaseException, root) -> str:
    """'tried to change reference.py on disk (...)' for a write the read-only filesystem refused, else ''."""
    if not isinstance(exc, OSError) or exc.errno != errno.EROFS:
        return ""
    text = os.fsdecode(exc.filename) if exc.filename is not None else "a file"
    return f"tried to change {text.removeprefix(str(root) + os.sep)} on disk (read-only in the sandbox)"
