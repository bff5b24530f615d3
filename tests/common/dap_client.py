# SPDX-License-Identifier: MIT
"""A small Debug Adapter Protocol client over a server's stdio, as an editor
drives one (lldb-dap, `gdb -i=dap`), for the tests.

    with DapClient(["lldb-dap-19"], log=path) as dap:
        dap.request("initialize", {"adapterID": "sfunwind", ...})
        dap.request("launch", {"program": prog, ...})
        dap.wait_event("initialized")
        dap.request("configurationDone")
        stopped = dap.wait_event("stopped")
        ...
        dap.disconnect()

Messages are framed with `Content-Length: N\\r\\n\\r\\n` and a JSON body. A
reader thread collects every message the server sends; `request()` waits for
the response to its own `seq`, `wait_event()` for an event (events are kept,
so one that came before the wait is found). Every wait has a timeout and
raises DapError when it runs out, or when the server exits or answers
`success: false`. Leaving the `with` block kills the server if it is still
running after `disconnect` (or after an error), so a test never hangs on it.
Reverse requests from the server (`runInTerminal`, ...) are answered with
`success: false`: the client announces none of them.
"""

import json
import os
import subprocess
import threading
import time


class DapError(Exception):
    """A failed request, a timeout, or a server that went away."""


class DapClient:
    def __init__(self, argv, env=None, cwd=None, timeout=30.0, log=None):
        """Starts `argv` (the server, speaking DAP on stdin/stdout; its
        stderr goes to `log` or is dropped). `timeout`: the default seconds
        each wait may take. `log`: a file that gets the server's stderr and
        every message both ways, for a failure's report."""
        self.timeout = timeout
        self.argv = list(argv)
        self._seq = 0
        self._messages = []  # (arrival index, message), in order
        self._cond = threading.Condition()
        self._eof = False
        self._log = open(log, "a") if log else None
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log if self._log else subprocess.DEVNULL,
                                     env=env, cwd=cwd, start_new_session=True)
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # -- the wire ---------------------------------------------------------

    def _note(self, direction, msg):
        if self._log:
            self._log.write("%s %.3f %s\n" % (direction, time.monotonic(), json.dumps(msg)))
            self._log.flush()

    def _read_message(self, stream):
        length = None
        while True:
            line = stream.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                if length is not None:
                    break
                continue
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        body = stream.read(length)
        if len(body) < length:
            return None
        return json.loads(body.decode("utf-8"))

    def _read_loop(self):
        stream = self.proc.stdout
        try:
            while True:
                msg = self._read_message(stream)
                if msg is None:
                    break
                self._note("<-", msg)
                if msg.get("type") == "request":  # a reverse request: declined
                    self._send({"type": "response", "request_seq": msg.get("seq"), "command": msg.get("command"),
                                "success": False, "message": "not supported by this client"})
                    continue
                with self._cond:
                    self._messages.append(msg)
                    self._cond.notify_all()
        except (OSError, ValueError) as e:
            self._note("<-", {"reader error": repr(e)})
        finally:
            with self._cond:
                self._eof = True
                self._cond.notify_all()

    def _send(self, msg):
        with self._cond:
            self._seq += 1
            msg = dict(msg, seq=self._seq)
        data = json.dumps(msg).encode("utf-8")
        self._note("->", msg)
        try:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise DapError("%s: cannot send %s: %s" % (self.argv[0], msg.get("command"), e)) from None
        return msg["seq"]

    def _wait(self, match, what, timeout):
        """The first message `match` accepts (removed from the queue)."""
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        with self._cond:
            while True:
                for i, m in enumerate(self._messages):
                    if match(m):
                        return self._messages.pop(i)
                if self._eof:
                    raise DapError("%s: the server ended (exit status %s) while waiting for %s"
                                   % (self.argv[0], self.proc.poll(), what))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DapError("%s: no %s within %.0f s" % (self.argv[0], what, limit))
                self._cond.wait(min(left, 0.5))

    # -- requests and events ----------------------------------------------

    def send_request(self, command, arguments=None):
        """Sends a request without waiting; returns its seq (for response())."""
        msg = {"type": "request", "command": command}
        if arguments is not None:
            msg["arguments"] = arguments
        return self._send(msg)

    def response(self, seq, command="", timeout=None):
        """The response to request `seq`: its whole message."""
        return self._wait(lambda m: m.get("type") == "response" and m.get("request_seq") == seq,
                          "response to %s (seq %d)" % (command or "request", seq), timeout)

    def request(self, command, arguments=None, timeout=None, check=True):
        """Sends a request and returns its response's body ({} when none).
        With check, a response with success false raises DapError."""
        seq = self.send_request(command, arguments)
        resp = self.response(seq, command, timeout)
        if check and not resp.get("success"):
            raise DapError("%s %s failed: %s %s" % (self.argv[0], command, resp.get("message", ""),
                                                    json.dumps(resp.get("body", {}))[:500]))
        return resp.get("body") or {}

    def wait_event(self, event, timeout=None, where=None):
        """The next event named `event` (for which where(body) holds): its body."""
        msg = self._wait(lambda m: m.get("type") == "event" and m.get("event") == event
                         and (where is None or where(m.get("body") or {})), "'%s' event" % event, timeout)
        return msg.get("body") or {}

    def events(self, event):
        """The bodies of the events named `event` received so far (kept)."""
        with self._cond:
            return [m.get("body") or {} for m in self._messages if m.get("type") == "event" and m.get("event") == event]

    # -- the end ----------------------------------------------------------

    def disconnect(self, timeout=10.0):
        """`disconnect` with terminateDebuggee, then waits for the server to
        exit (killed when it does not within `timeout`). Returns the
        server's exit status; a failure to disconnect cleanly raises
        DapError after the server is gone."""
        error = None
        try:
            self.request("disconnect", {"terminateDebuggee": True}, timeout=timeout)
        except DapError as e:
            error = e
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            status = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise DapError("%s: still running %.0f s after disconnect; killed" % (self.argv[0], timeout)) from None
        if error is not None:
            raise error
        return status

    def kill(self):
        """Ends the server and what it started (its process group)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def close(self):
        self.kill()
        self._reader.join(timeout=5)
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        if self._log:
            self._log.close()
            self._log = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
