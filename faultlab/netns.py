"""Network namespaces: the owner of every change faultlab makes to the network.

A run's launchers and workers live in a private network namespace holding only a loopback
interface, where faultlab has the permission to make one (root, CAP_SYS_ADMIN). There:
- nothing can leave the machine: torch's TCPStore does reverse DNS look-ups of every peer
  (`getnameinfo` on `::ffff:127.0.0.1`), which on the host network go to the configured
  nameserver; in the namespace they fail at once, unanswered by anyone;
- two runs never compete for ports, and nothing a run listens on is visible outside it.
Without the permission, runs use the host's loopback, as torchrun itself would.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import socket
import struct

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1

PRIVATE = "private network namespace (loopback only)"
HOST = "host loopback (no permission for a private network namespace)"


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _bring_up(interface: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control:
        request = struct.pack("16sH", interface.encode(), 0)
        flags = struct.unpack("16sH", fcntl.ioctl(control, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(control, SIOCSIFFLAGS, struct.pack("16sH", interface.encode(), flags | IFF_UP))


@contextlib.contextmanager
def private_loopback():
    """Move this thread into a new network namespace with loopback up for the duration;
    processes started meanwhile stay in it. Yields PRIVATE, or HOST where not permitted."""
    libc = _libc()
    original = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        if libc.unshare(CLONE_NEWNET) != 0:
            yield HOST
            return
        try:
            _bring_up("lo")
            yield PRIVATE
        finally:
            if libc.setns(original, CLONE_NEWNET) != 0:
                error = ctypes.get_errno()
                raise OSError(error, f"cannot return to the original network namespace: {os.strerror(error)}")
    finally:
        os.close(original)
