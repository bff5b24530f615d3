# SPDX-License-Identifier: MIT
"""A watchdog for test scripts that drive a debugger in their own process.

A deadlock inside LLDB (the SB API runs in the test's process) would hang a
suite until CI's own limit, with nothing printed about where. `arm(seconds,
label)` starts a small watcher process. When the test is still running after
`seconds`, the watcher prints the native stacks of every thread (GDB attached
to the test, when GDB is there), then sends SIGABRT: faulthandler prints
the Python stack of every thread and the test ends with a failure status.
The watcher ends by itself when the test does.
"""

import faulthandler
import os
import subprocess
import sys

_WATCHER = r"""
import os, shutil, signal, subprocess, sys, time
pid, seconds, label = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    time.sleep(1)
    if os.getppid() != pid:  # the test ended (this process was re-parented)
        sys.exit(0)
sys.stderr.write("WATCHDOG: %s still running after %d s; native stacks, then SIGABRT\n" % (label, seconds))
gdb = shutil.which("gdb")
if gdb:
    try:
        out = subprocess.run([gdb, "-nx", "-batch", "-p", str(pid), "-ex", "thread apply all bt 40"],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        sys.stderr.write(out.stdout + out.stderr)
    except subprocess.TimeoutExpired:
        sys.stderr.write("WATCHDOG: gdb did not print the stacks within 120 s\n")
sys.stderr.flush()
os.kill(pid, signal.SIGABRT)
"""


def arm(seconds, label):
    """Ends this process with SIGABRT (and every thread's stack) if it is
    still running after `seconds`. 0 or less: no watchdog."""
    if seconds <= 0:
        return
    faulthandler.enable(file=sys.stderr, all_threads=True)
    sys.stdout.flush()
    subprocess.Popen([sys.executable, "-c", _WATCHER, str(os.getpid()), str(seconds), label],
                     stdin=subprocess.DEVNULL, start_new_session=True)


def seconds_from_env(default):
    """SFUNWIND_TEST_WATCHDOG (seconds; 0 disables) or `default`."""
    value = os.environ.get("SFUNWIND_TEST_WATCHDOG")
    try:
        return float(value) if value else default
    except ValueError:
        return default
