"""`vhostlab replay --pcap FILE` (docs/cli.md): the packets of a replay as a pcap capture.

The file is read back here with the classic pcap layout (global header, then per frame a
16-byte record header and the bytes), independently of the writer, and compared with what the
trace itself says the packets are.
"""

from __future__ import annotations

import struct
from pathlib import Path

TRACE = """vhostlab-trace 1
features version_1 mrg_rxbuf
region 0x0 0x10000
region 0x10000 0x10000
queue tx tx size=8 at=0x0
queue rx rx size=8 at=0x1000
fill 0x10000 12 zero
fill 0x1000c 60 seq:7
post tx 0x10000+72
fill 0x10100 12 zero
fill 0x1010c 1500 seq:8
post tx 0x10100+1512
kick tx
dequeue tx 8
expect dequeued tx 2
post rx 0x12000+2048:w
kick rx
enqueue rx len=98,data=byte:0x5a len=3000,data=zero
expect enqueued rx 1
expect status rx 0 delivered
"""


def splitmix64(x: int) -> int:
    m = (1 << 64) - 1
    z = (x + 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def seq(seed: int, n: int) -> bytes:
    return b"".join(splitmix64(seed + i).to_bytes(8, "little") for i in range(n // 8 + 1))[:n]


def read_pcap(path: Path) -> tuple[int, list[tuple[int, int, bytes]]]:
    data = path.read_bytes()
    magic, vmaj, vmin, _zone, _sig, snap, link = struct.unpack_from("<IHHiIII", data, 0)
    assert (magic, vmaj, vmin) == (0xA1B2C3D4, 2, 4)
    assert snap >= 65535
    frames, off = [], 24
    while off < len(data):
        sec, usec, caplen, origlen = struct.unpack_from("<IIII", data, off)
        off += 16
        frames.append((sec * 1_000_000 + usec, origlen, data[off:off + caplen]))
        off += caplen
    assert off == len(data)
    return link, frames


def test_pcap_holds_every_packet_in_order(vhostlab, tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_text(TRACE)
    pcap = tmp_path / "t.pcap"
    res = vhostlab("replay", "--pcap", str(pcap), str(trace))
    assert res.returncode == 0, res.describe()
    link, frames = read_pcap(pcap)
    assert link == 1  # Ethernet
    # TX packets as dequeued (header stripped), then the one RX packet delivered; the
    # 3000-byte one did not fit and is not in the capture.
    want = [seq(7, 60), seq(8, 1500), b"\x5a" * 98]
    assert [f[2] for f in frames] == want
    assert [f[1] for f in frames] == [len(w) for w in want]
    assert [f[0] for f in frames] == [0, 1, 2]  # synthetic, deterministic timestamps
    # The same replay writes the same file.
    again = tmp_path / "again.pcap"
    assert vhostlab("replay", "--pcap", str(again), str(trace)).returncode == 0
    assert again.read_bytes() == pcap.read_bytes()


def test_pcap_path_error(vhostlab, tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_text(TRACE)
    bad = tmp_path / "no" / "such" / "dir" / "x.pcap"
    res = vhostlab("replay", "--pcap", str(bad), str(trace))
    assert res.returncode == 2, res.describe()
    assert str(bad) in res.stderr
