"""Inside the child: no internet socket may be opened (the sandbox has no network either; this names the attempt).

An audit hook (PEP 578) cannot be removed once added, so the submission cannot undo it from Python.
"""
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
