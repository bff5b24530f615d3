# SPDX-License-Identifier: MIT
"""qemu-user's gdbstub for the debugger tests: start a program under
`qemu-ARCH -g PORT` and wait until the stub listens.

The stub accepts exactly one connection, so readiness is read from the
kernel's socket tables (/proc/net/tcp*) instead of by connecting."""

import contextlib
import socket
import subprocess
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def listening(port):
    """Whether a socket listens on TCP `port` (state 0A in /proc/net/tcp*)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()  # local address "ADDR:PORT" (hex), ..., state
                    if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                        return True
        except OSError:
            continue
    return False


class StubError(Exception):
    pass


@contextlib.contextmanager
def started(qemu, program_args, timeout=30):
    """Runs `qemu + ["-g", PORT] + program_args`; yields PORT once the stub
    listens (StubError if it exits or does not listen within `timeout`
    seconds); kills qemu on the way out."""
    port = free_port()
    stub = subprocess.Popen(list(qemu) + ["-g", str(port)] + list(program_args), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + timeout
        while not listening(port):
            if stub.poll() is not None or time.time() > deadline:
                raise StubError("%s did not start listening on port %d" % (qemu[0], port))
            time.sleep(0.05)
        yield port
    finally:
        if stub.poll() is None:
            stub.kill()
        stub.wait()
