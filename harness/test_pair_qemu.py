"""Two Linux guests talking through `vhostlab-fast serve --mode pair:` (docs/interop.md,
"Guest to guest"): offloaded frames between guests, passed as they are when both negotiated
the offloads, made to fit in software (serve_fit.c, the core's vl_sw_fit) when the receiver
did not.

    vhostlab-fast serve --socket A --mode pair:B
    qemu (guest A, client) -- A --+-- serve --+-- B -- qemu (guest B, peer)
      10.99.1.2: pings B, sends BYTES to B:5001, receives BYTES from B:5002
                                        10.99.1.3: sink on 5001, source on 5002

No TAP device and no address on any host interface: the two guests only reach each other.
Guest B starts first and says when it listens; then guest A runs. Both print a VHL-RESULT
line (harness/guest/build_initramfs.py, vhl_role=client / peer) and power off.

Cells:
  tso-pair-passthrough  both guests negotiate checksum offload and TSO: TSO frames cross
                        unchanged both ways, serve segments and checksums nothing;
  tso-pair-fallback     guest B takes no receive offload (guest_csum, guest_tso4/6 and
                        guest_ecn off on its device): what A sends it is segmented (TSO
                        frames) or checksummed (partial checksums) by serve, no frame over
                        1518 bytes reaches B, while B's own TSO frames reach A as they are.
Both check the digests each way and that nothing was dropped.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from test_interop_qemu import (  # noqa: F401  (fixtures are found by name)
    MAX_PLAIN,
    QEMU_TIMEOUT,
    START_TIMEOUT,
    TSO_BITS,
    dump,
    guest,
    guest_bits,
    guest_result,
    json_lines,
    kill_group,
    qemu,
    stop_serve,
    tail,
    wait_for,
)

MIB = 1 << 20
BYTES = max(16, int(os.environ.get("VHOSTLAB_QEMU_TSO_MIB", "16"))) * MIB
IP_A, IP_B = "10.99.1.2", "10.99.1.3"  # inside the two guests only
MAC_A, MAC_B = "52:54:00:12:34:56", "52:54:00:12:34:57"
TRANSFER_TIMEOUT = 60
NO_GUEST_OFFLOADS = ",guest_csum=off,guest_tso4=off,guest_tso6=off,guest_ecn=off,guest_ufo=off"

CELLS = {
    "tso-pair-passthrough": "",
    "tso-pair-fallback": NO_GUEST_OFFLOADS,
}


class Pair:
    """serve in pair mode and the two QEMUs, torn down in close()."""

    def __init__(self, prog, workdir: Path) -> None:
        self.prog = prog
        self.dir = workdir
        self.sock = {"A": workdir / "a.sock", "B": workdir / "b.sock"}
        self.logs = {
            "serve stderr": workdir / "serve.err",
            "guest A console": workdir / "a.console",
            "guest B console": workdir / "b.console",
            "qemu A stderr": workdir / "a.err",
            "qemu B stderr": workdir / "b.err",
        }
        self.serve = None
        self.qemus: dict[str, subprocess.Popen] = {}
        self.argv: dict[str, list[str]] = {}
        self._files = []

    def _open(self, name: str):
        f = open(self.logs[name], "w")
        self._files.append(f)
        return f

    def start_serve(self) -> None:
        self.argv["serve"] = [str(self.prog.path), "serve", "--socket", str(self.sock["A"]),
                              "--mode", f"pair:{self.sock['B']}", "--json"]
        self.serve = subprocess.Popen(
            ["timeout", "-s", "KILL", str(int(2 * QEMU_TIMEOUT + 60)), *self.argv["serve"]],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=self._open("serve stderr"), text=True)
        wait_for(lambda: self.serve.poll() is not None or sum(
            e.get("event") == "listening" for e in json_lines(self.logs["serve stderr"])) == 2,
            START_TIMEOUT, "serve to listen on both sockets", self.logs)
        if self.serve.poll() is not None:
            pytest.fail(f"serve exited {self.serve.returncode}" + dump(self.logs),
                        pytrace=False)

    def start_qemu(self, qemu: str, guest: dict, who: str, dev_extra: str) -> None:
        g = Path(guest["dir"])
        ip, mac = (IP_A, MAC_A) if who == "A" else (IP_B, MAC_B)
        role = (f"vhl_role=client vhl_peer={IP_B} vhl_rx=1 vhl_pings=3" if who == "A"
                else "vhl_role=peer")
        self.argv[who] = [
            qemu, "-accel", "tcg", "-m", "128",
            "-object", "memory-backend-memfd,id=mem,size=128M,share=on",
            "-numa", "node,memdev=mem",
            "-chardev", f"socket,id=c0,path={self.sock[who]}",
            "-netdev", "type=vhost-user,id=n0,chardev=c0",
            "-device", f"virtio-net-pci,netdev=n0,mac={mac},vectors=0{dev_extra}",
            "-kernel", str(g / "vmlinux"), "-initrd", str(g / "initramfs.cpio"),
            "-append", (f"console=ttyS0 quiet panic=-1 vhl_ip={ip} vhl_tx={BYTES} "
                        f"vhl_timeout={TRANSFER_TIMEOUT} {role}"),
            "-display", "none", "-no-reboot", "-nodefaults", "-serial", "stdio",
        ]
        self.qemus[who] = subprocess.Popen(
            ["timeout", "-s", "KILL", str(int(QEMU_TIMEOUT)), *self.argv[who]],
            stdin=subprocess.DEVNULL, stdout=self._open(f"guest {who} console"),
            stderr=self._open(f"qemu {who} stderr"))

    def stop_serve(self) -> dict:
        return stop_serve(self.serve, self.logs)

    def close(self) -> None:
        for p in self.qemus.values():
            kill_group(p)
        kill_group(self.serve)
        for f in self._files:
            f.close()


@pytest.mark.parametrize("cell", list(CELLS))
def test_two_guests_through_serve_pair(vhostlab_fast, qemu, guest, cell, capsys):
    with tempfile.TemporaryDirectory(prefix="vhl-pair-") as d:
        p = Pair(vhostlab_fast, Path(d))
        try:
            p.start_serve()
            p.start_qemu(qemu, guest, "B", CELLS[cell])
            wait_for(lambda: p.qemus["B"].poll() is not None or "VHL: listening" in tail(
                p.logs["guest B console"], 10**6), QEMU_TIMEOUT / 2, "guest B to listen",
                p.logs)
            t0 = time.monotonic()
            p.start_qemu(qemu, guest, "A", "")
            for who in ("A", "B"):
                p.qemus[who].wait()
            secs = time.monotonic() - t0
            serve = p.stop_serve()
            a = guest_result(p.logs["guest A console"])
            b = guest_result(p.logs["guest B console"])
            logs = dump(p.logs)
            rcs = {who: q.returncode for who, q in p.qemus.items()}
        finally:
            p.close()

    ctx = (f"\nguest A {a}\nguest B {b}\nqemu A: {' '.join(p.argv['A'])}\n"
           f"serve: {' '.join(p.argv['serve'])}{logs}")
    assert rcs == {"A": 0, "B": 0}, f"QEMU exit statuses {rcs} (124/137: timed out){ctx}"
    assert a and b and a.get("status") == "ok" and b.get("status") == "ok", ctx
    # The queue of each port: its tx_* is what serve gave that port's guest.
    qa, qb = (port["queues"][0] for port in serve["ports"])
    fb_a, fb_b = qa["offload_fallbacks"], qb["offload_fallbacks"]
    def fallbacks(fb: dict) -> str:
        return (f"segmented {fb['segmented']} into {fb['frames']} frames, checksummed "
                f"{fb['checksummed']}, refused {sum(fb['refused'].values())}")

    with capsys.disabled():
        print(f"\n  qemu pair {cell}: ping {a['ping_received']}/{a['ping_sent']}; A->B "
              f"{b['sink_bytes']} B md5 {'ok' if a['tx_md5'] == b['sink_md5'] else 'MISMATCH'}"
              f" {a['tx_secs']} s, B->A {a['rx_bytes']} B md5 "
              f"{'ok' if a['rx_md5'] == b['source_md5'] else 'MISMATCH'} {a['rx_secs']} s; "
              f"{secs:.1f} s; offloads A {' '.join(sorted(guest_bits(a))) or 'none'}, B "
              f"{' '.join(sorted(guest_bits(b))) or 'none'}; to A: {qa['tx_packets']} frames "
              f"({qa['tx_size_bins']['gt1518']} over {MAX_PLAIN} B), {fallbacks(fb_a)}; to B: "
              f"{qb['tx_packets']} frames ({qb['tx_size_bins']['gt1518']} over {MAX_PLAIN} B), "
              f"{fallbacks(fb_b)}; TCP retransmits A {a['tcp_retrans']} B {b['tcp_retrans']}, "
              f"bad checksums A {a['tcp_csum_errors']} B {b['tcp_csum_errors']}", end="")
    assert int(a["ping_received"]) == int(a["ping_sent"]) == 3, ctx
    assert a["tx_rc"] == "0" and b["sink_rc"] == "0" and b["sink_partial"] == "0", ctx
    assert int(a["tx_bytes"]) == int(b["sink_bytes"]) == BYTES, ctx
    assert a["tx_md5"] == b["sink_md5"], "A->B data differ (md5)" + ctx
    assert a["rx_rc"] == "0" and b["source_rc"] == "0" and a["rx_partial"] == "0", ctx
    assert int(a["rx_bytes"]) == int(b["source_bytes"]) == BYTES, ctx
    assert a["rx_md5"] == b["source_md5"], "B->A data differ (md5)" + ctx
    assert serve["exit"] == 0 and serve["leaked_packets"] == 0, ctx
    # Checksums serve completed (and those of the frames it cut) are checked by the
    # receiving stack: none failed.
    assert a["tcp_csum_errors"] == b["tcp_csum_errors"] == "0", ctx
    for q in (qa, qb):
        for reason in ("malformed", "too_big", "no_memory", "offload"):
            assert q["drops_by_reason"][reason] == 0, f"{reason}: {q}{ctx}"
        assert not any(q["offload_fallbacks"]["refused"].values()), ctx
    # A took every offload; it got B's TSO frames as they were.
    assert guest_bits(a) == set(TSO_BITS), ctx
    assert fb_a["segmented"] == fb_a["checksummed"] == 0, ctx
    assert qa["tx_size_bins"]["gt1518"] > 0, ctx
    if cell == "tso-pair-passthrough":
        assert guest_bits(b) == set(TSO_BITS), ctx
        assert fb_b["segmented"] == fb_b["checksummed"] == 0, ctx
        assert qb["tx_size_bins"]["gt1518"] > 0, ctx
    else:
        # B takes nothing offloaded: A's TSO frames were cut and its partial checksums
        # completed by serve, and B got nothing longer than a plain frame.
        assert guest_bits(b) == set(TSO_BITS) - {"guest_csum", "guest_tso4", "guest_tso6",
                                                 "guest_ecn"}, ctx
        assert fb_b["segmented"] > 0 and fb_b["frames"] > fb_b["segmented"], ctx
        assert fb_b["checksummed"] > 0, ctx
        assert qb["tx_size_bins"]["gt1518"] == 0, ctx
        # Every TSO frame A sent went through the fallback: as many as serve cut.
        assert fb_b["segmented"] == serve["ports"][0]["queues"][0]["rx_size_bins"]["gt1518"], (
            ctx)
