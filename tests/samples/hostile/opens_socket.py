# Hostile sample: opens a network socket while it is imported (192.0.2.1 is TEST-NET-1: nothing answers there).
# verdict sandbox: no network
# verdict files: no network
import socket

from reference import ref_kernel

connection = socket.create_connection(("192.0.2.1", 80), timeout=3)


def custom_kernel(data):
    return ref_kernel(data)
