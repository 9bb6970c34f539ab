#!/usr/bin/env python3
"""The host side of the QEMU interop test (harness/test_interop_qemu.py), run inside the
test's network namespace (`ip netns exec NS python3 host_peer.py ...`).

Listens on ADDR for one connection on each of two TCP ports:
  sink (5001)    reads until the guest closes: counts and checksums what the guest sent;
  source (5002)  sends --bytes of seeded pseudo-random data to the guest, then closes.

Prints JSON lines on stdout: {"event": "ready"} once both ports listen, then one line per
finished transfer ({"event": "source_start"} when the guest connected to the source):
  {"event": "sink", "bytes": N, "md5": "...", "sha256": "...", "secs": S}
  {"event": "source", "bytes": N, "md5": "...", "sha256": "...", "secs": S}
and exits when both are done (0) or after --timeout seconds (1, with
{"event": "timeout", ...}). "secs" runs from accept to the end of the transfer.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import socket
import sys
import threading
import time

CHUNK = 1 << 20
_out_lock = threading.Lock()


def emit(**kw) -> None:
    with _out_lock:
        print(json.dumps(kw), flush=True)


def listener(addr: str, port: int) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(1)
    return s


def sink(ls: socket.socket) -> None:
    c, peer = ls.accept()
    t0 = time.monotonic()
    md5, sha = hashlib.md5(), hashlib.sha256()
    n = 0
    with c:
        while True:
            b = c.recv(CHUNK)
            if not b:
                break
            md5.update(b)
            sha.update(b)
            n += len(b)
    emit(event="sink", peer=peer[0], bytes=n, md5=md5.hexdigest(), sha256=sha.hexdigest(),
         secs=round(time.monotonic() - t0, 3))


def source(ls: socket.socket, total: int, seed: int, rate: float) -> None:
    c, peer = ls.accept()
    t0 = time.monotonic()
    emit(event="source_start", peer=peer[0])
    rng = random.Random(seed)
    md5, sha = hashlib.md5(), hashlib.sha256()
    sent = 0
    error = None
    with c:
        try:
            while sent < total:
                b = rng.randbytes(min(CHUNK, total - sent))
                c.sendall(b)
                md5.update(b)
                sha.update(b)
                sent += len(b)
                if rate > 0:  # --rate: no faster than rate MiB/s on average
                    ahead = sent / (rate * CHUNK) - (time.monotonic() - t0)
                    if ahead > 0:
                        time.sleep(ahead)
            c.shutdown(socket.SHUT_WR)
            # Wait for the guest to close its side: all of it arrived (or it gave up).
            c.settimeout(30)
            while c.recv(4096):
                pass
        except OSError as e:
            error = str(e)
    emit(event="source", peer=peer[0], bytes=sent, md5=md5.hexdigest(), sha256=sha.hexdigest(),
         secs=round(time.monotonic() - t0, 3), error=error)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", default="10.99.0.1")
    ap.add_argument("--sink-port", type=int, default=5001)
    ap.add_argument("--source-port", type=int, default=5002)
    ap.add_argument("--bytes", type=int, default=64 << 20, help="source bytes (0: no source)")
    ap.add_argument("--no-sink", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rate", type=float, default=0,
                    help="source MiB/s at most (0: as fast as it goes); a migration cell "
                         "keeps the stream running while the guest moves")
    ap.add_argument("--timeout", type=float, default=150)
    a = ap.parse_args()

    threads = []
    if not a.no_sink:
        threads.append(threading.Thread(target=sink, args=(listener(a.addr, a.sink_port),),
                                        daemon=True))
    if a.bytes > 0:
        threads.append(threading.Thread(
            target=source, args=(listener(a.addr, a.source_port), a.bytes, a.seed, a.rate),
            daemon=True))
    for t in threads:
        t.start()
    emit(event="ready")
    deadline = time.monotonic() + a.timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in threads):
        emit(event="timeout", secs=a.timeout)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
