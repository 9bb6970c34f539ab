"""A minimal QMP client for the lifecycle cells: QEMU's monitor over a unix socket.

QMP speaks one JSON object per line. After the greeting the client must send
`qmp_capabilities`; then each command gets a reply ({"return": ...} or {"error": ...}), and
asynchronous events ({"event": ...}) may arrive in between: they are kept, in order, so a
test can wait for one (e.g. DEVICE_DELETED after device_del)."""

from __future__ import annotations

import json
import socket
import time


class QMPError(Exception):
    pass


class QMP:
    def __init__(self, path: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError as e:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise QMPError(f"cannot connect to QMP at {path}: {e}") from e
                time.sleep(0.1)
        self.sock.settimeout(timeout)
        self.buf = b""
        self.events: list[dict] = []
        greeting = self._read()
        if "QMP" not in greeting:
            raise QMPError(f"no QMP greeting from {path}: {greeting}")
        self.execute("qmp_capabilities")

    def _read(self) -> dict:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise QMPError("QMP connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def execute(self, cmd: str, **args) -> object:
        msg = {"execute": cmd}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            r = self._read()
            if "event" in r:
                self.events.append(r)
                continue
            if "error" in r:
                raise QMPError(f"{cmd} {args}: {r['error'].get('desc', r['error'])}")
            return r.get("return")

    def wait_event(self, name: str, timeout: float) -> dict:
        """The first event called name not yet consumed, waiting up to timeout seconds."""
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("event") == name:
                    return self.events.pop(i)
            left = deadline - time.monotonic()
            if left <= 0:
                raise QMPError(f"no {name} event within {timeout} s "
                               f"(saw: {[e.get('event') for e in self.events]})")
            self.sock.settimeout(left)
            try:
                self.events.append(self._read())
            except socket.timeout:
                continue

    def close(self) -> None:
        self.sock.close()
