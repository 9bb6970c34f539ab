#!/usr/bin/env python3
"""Build the Linux guest that harness/test_interop_qemu.py boots under QEMU.

From Debian's packages (linux-image-amd64, busybox-static) this writes, into a cache
directory:

  vmlinux         the uncompressed kernel ELF, extracted from /boot/vmlinuz-VERSION (an XZ
                  stream inside the bzImage). Debian's kernel has CONFIG_PVH, so QEMU boots
                  it directly with -kernel: about 1 s to userspace under TCG instead of ~4 s
                  for the bzImage's own decompressor.
  initramfs.cpio  an uncompressed newc archive (~2 MB): the static busybox, the virtio
                  modules in load order and /init (below).
  manifest.json   what went in: kernel version, sources, sizes, the cache key.

The cache directory is <build root>/guest/<kernel version>-<key>, the key being a hash of
this file and of the inputs' names, sizes and modification times: a second run, or a
second test, reuses it (printing its path); a new kernel, busybox or /init builds a new one
and removes the old ones. The build root is $VHOSTLAB_BUILD_ROOT, else <repo>/build.
The build writes a temporary directory and renames it, so concurrent builds cannot see a
half-written guest.

The guest's /init (GUEST_INIT below) mounts proc/sys/dev, insmods virtio_ring, virtio,
virtio_pci_modern_dev, virtio_pci_legacy_dev, virtio_pci, failover, net_failover and
virtio_net, configures eth0 from the kernel command line, pings the peer, moves data over
TCP both ways with busybox nc (checksummed with md5sum on the guest side), prints one
result line on the serial console and powers off:

  VHL-RESULT ping_sent=3 ping_received=3 tx_bytes=67108864 tx_rc=0 tx_md5=... tx_secs=0.93
             rx_bytes=67108864 rx_partial=0 rx_rc=0 rx_md5=... rx_secs=1.67
             features=1100... eth_tx_packets=N eth_tx_bytes=N eth_rx_packets=N
             eth_rx_bytes=N tcp_retrans=N tcp_csum_errors=N status=ok

(one line; "tx" is what the guest sent, "rx" what it received; *_rc the exit status of
the transfer, 124 when it timed out; features the virtio feature bits the driver
negotiated, /sys/class/net/eth0/device/features: character i + 1 is bit i; eth_* eth0's
counters, where a TSO frame of 64 KiB is one packet; tcp_* TCP's segments retransmitted
and received with a bad checksum (/proc/net/snmp); status=ok when the script got that
far, else what stopped it, e.g. status=no_eth0). Command line parameters, all optional:

  vhl_ip=10.99.0.2       the guest's address (/24)
  vhl_peer=10.99.0.1     the host side: a sink on TCP port 5001, a source on 5002
  vhl_tx=BYTES           bytes the guest sends to the sink (a multiple of 1 MiB; 0 skips)
  vhl_rx=1               receive from the source (0 skips)
  vhl_timeout=SECONDS    per transfer (busybox timeout)
  vhl_pings=N            echo requests (0.2 s apart)
  vhl_pingloop=SECS      instead of pinging and moving data: ping the peer every 0.25 s
                         for SECS seconds, one line per echo request, "VHL-PING N ok" or
                         "VHL-PING N FAIL", then the result line with pingloop_ok=N
                         pingloop_fail=N (the reconnect cells of test_lifecycle_qemu.py
                         restart the back end meanwhile)
  vhl_reload=1           between sending and receiving, unload virtio_net and load it
                         again (the driver resets the device, which is then set up
                         anew), configure eth0 again and ping the peer vhl_pings times;
                         the result line gets reload_ping=ANSWERED (test_lifecycle_qemu.py)
  vhl_pings_after=N      echo requests after the transfers, answered count in the result
                         line's after_ping=N (the migration cells: the guest moved meanwhile)
  vhl_md5=1              0: for throughput measurements, no md5sum under TCG (slower than
                         the network) and no process per MiB: the guest sends zeros from
                         one dd (tx_md5=-: the digest of zeros) and counts what it
                         receives without checksumming it (rx_md5=-)
  vhl_role=client        client: the above; peer: instead of pinging and connecting, be
                         the other end of a guest-to-guest stream (serve --mode pair),
                         as host_peer.py is for the host: accept one connection on TCP
                         5001 (a sink, checksummed) and one on 5002 (sending vhl_tx
                         bytes), print "VHL: listening" first and then
                         VHL-RESULT role=peer sink_bytes=N sink_partial=0 sink_rc=0
                         sink_md5=... source_bytes=N source_rc=0 source_md5=...
                         features=... eth_...=N status=ok

What the guest sends: a 1 MiB block from /dev/urandom, vhl_tx / 1 MiB times (generating
all of it from /dev/urandom under TCG costs more than moving it); its md5 is taken from the
same stream before sending. What it receives goes through dd (which counts 64 KiB
records) into md5sum. busybox nc copies 1 KiB per system call (so does tee), which under TCG
made 64 MiB take 15 s; so nc only connects, and with -e runs the script that moves the
data through the socket itself: 64 MiB then takes about 1 s out, 1.7 s in.

Usage: build_initramfs.py [--out-root DIR] [--kernel-version V] [--force] [--json]
Prints the guest directory on stdout (or a JSON object with --json). Exit 1 with a message
when an input is missing (the packages are in ./lab's list).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BUSYBOX = Path("/bin/busybox")
BOOT = Path("/boot")
MODULES_ROOT = Path("/lib/modules")

# In load order: each needs only the ones before it (modules.dep of Debian's 6.1 kernel).
MODULES = [
    "drivers/virtio/virtio_ring.ko",
    "drivers/virtio/virtio.ko",
    "drivers/virtio/virtio_pci_modern_dev.ko",
    "drivers/virtio/virtio_pci_legacy_dev.ko",
    "drivers/virtio/virtio_pci.ko",
    "net/core/failover.ko",
    "drivers/net/net_failover.ko",
    "drivers/net/virtio_net.ko",
]

GUEST_INIT = r"""#!/bin/busybox sh
# vhostlab QEMU interop guest (written by harness/guest/build_initramfs.py)
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /tmp
mount -t tmpfs -o size=8m tmpfs /tmp

say() { echo "VHL: $*"; }
# Centiseconds since boot (/proc/uptime has two decimals).
now_cs() { read up idle < /proc/uptime; echo $(( ${up%.*} * 100 + 1${up#*.} - 100 )); }
secs() { d=$(( $2 - $1 )); printf '%d.%02d' $((d / 100)) $((d % 100)); }
finish() {
    echo "VHL-RESULT $*"
    sync
    poweroff -f
    sleep 10
}

IP=10.99.0.2 PEER=10.99.0.1 TX=0 RX=0 TMO=120 PINGS=3 ROLE=client MD5=1 RELOAD=0 LOOP=0
AFTER=0
for w in $(cat /proc/cmdline); do
    case "$w" in
    vhl_role=*) ROLE=${w#*=} ;;
    vhl_md5=*) MD5=${w#*=} ;;
    vhl_ip=*) IP=${w#*=} ;;
    vhl_peer=*) PEER=${w#*=} ;;
    vhl_tx=*) TX=${w#*=} ;;
    vhl_rx=*) RX=${w#*=} ;;
    vhl_timeout=*) TMO=${w#*=} ;;
    vhl_pings=*) PINGS=${w#*=} ;;
    vhl_reload=*) RELOAD=${w#*=} ;;
    vhl_pingloop=*) LOOP=${w#*=} ;;
    vhl_pings_after=*) AFTER=${w#*=} ;;
    esac
done

M=/lib/modules/$(uname -r)/kernel
for m in @MODULES@; do
    insmod "$M/$m" || finish "status=insmod_failed module=$m"
done
i=0
while [ ! -e /sys/class/net/eth0 ]; do
    i=$((i + 1))
    [ $i -gt 100 ] && finish "status=no_eth0"
    sleep 0.1
done
ip link set lo up
ip link set eth0 up
ip addr add "$IP/24" dev eth0
say "eth0 $IP up, mtu $(cat /sys/class/net/eth0/mtu)," \
    "features $(cat /sys/class/net/eth0/device/features 2>/dev/null)"
S=/sys/class/net/eth0/statistics
# What the driver negotiated (bit i of the feature word is character i + 1) and what eth0
# moved as the guest's stack counts it: with TSO a 64 KiB frame is one packet.
# TCP's own view: segments retransmitted, and received with a bad checksum.
tcp_stat() {
    awk -v k="$1" '$1 == "Tcp:" { if (!n) { for (i = 2; i <= NF; i++) c[$i] = i; n = 1 }
        else print $c[k] }' /proc/net/snmp
}
counters() {
    echo "features=$(cat /sys/class/net/eth0/device/features 2>/dev/null)" \
        "eth_tx_packets=$(cat $S/tx_packets) eth_tx_bytes=$(cat $S/tx_bytes)" \
        "eth_rx_packets=$(cat $S/rx_packets) eth_rx_bytes=$(cat $S/rx_bytes)" \
        "tcp_retrans=$(tcp_stat RetransSegs) tcp_csum_errors=$(tcp_stat InCsumErrors)"
}
# The block the guest sends (vhl_tx / 1 MiB times) and the receiver's script. busybox nc
# copies 1 KiB at a time and tee does no better: under TCG that costs more than the
# network. So nc only connects or accepts (-e), and the programs it runs move the data
# through the socket themselves (cat writes whole blocks, dd reads up to 64 KiB).
make_send() {
    dd if=/dev/urandom of=/tmp/block bs=65536 count=16 2>/dev/null
    printf '#!/bin/sh\ni=0\nwhile [ $i -lt %d ]; do cat /tmp/block; i=$((i + 1)); done\n' \
        $((TX / 1048576)) > /tmp/send
    chmod +x /tmp/send
    # The stream is the same file n times: its checksum is taken before it is sent.
    /tmp/send | md5sum | cut -d' ' -f1
}
printf '#!/bin/sh\ndd bs=65536 iflag=fullblock 2>/tmp/rx.dd | md5sum > /tmp/rx.md5\n' \
    > /tmp/recv
# A throughput measurement (scripts/bench_tso.py) leaves out the digest, which under TCG
# costs the guest more than the network does.
[ "$MD5" = 0 ] && printf '#!/bin/sh\ndd bs=65536 iflag=fullblock of=/dev/null 2>/tmp/rx.dd\n' \
    > /tmp/recv
chmod +x /tmp/recv
# busybox dd prints no byte count, only "FULL+PARTIAL records in": with iflag=fullblock
# every record but the last is a full 64 KiB, so the count is exact when PARTIAL is 0 (the
# sender sends a multiple of 64 KiB); otherwise *_partial=1 says a piece is missing.
received() {
    rec=$(sed -n 's/^\([0-9]*\)+\([0-9]*\) records in.*/\1 \2/p' /tmp/rx.dd 2>/dev/null)
    [ -n "$rec" ] || rec="0 0"
    [ -s /tmp/rx.md5 ] || echo - > /tmp/rx.md5
    echo "$(( ${rec% *} * 65536 )) ${rec#* } $(cut -d' ' -f1 /tmp/rx.md5)"
}

if [ "$ROLE" = peer ]; then
    # The other end of a guest-to-guest stream (serve --mode pair), as host_peer.py is for
    # the host: a sink on TCP 5001, a source of vhl_tx bytes on 5002, one connection each.
    SRCS=$(make_send)
    timeout "$TMO" nc -l -p 5001 -e /tmp/recv &
    P1=$!
    timeout "$TMO" nc -l -p 5002 -e /tmp/send &
    P2=$!
    say "listening"
    wait $P1
    R1=$?
    wait $P2
    R2=$?
    set -- $(received)
    finish "role=peer sink_bytes=$1 sink_partial=$2 sink_rc=$R1 sink_md5=$3" \
        "source_bytes=$TX source_rc=$R2 source_md5=$SRCS $(counters) status=ok"
fi

if [ "$LOOP" -gt 0 ]; then
    # A steady trickle the host can watch while it restarts the back end: each line says
    # whether one echo request was answered within a second.
    end=$(( $(now_cs) + LOOP * 100 )) n=0 ok=0 bad=0
    while [ "$(now_cs)" -lt "$end" ]; do
        n=$((n + 1))
        if ping -c 1 -W 1 "$PEER" > /dev/null 2>&1; then
            ok=$((ok + 1)); echo "VHL-PING $n ok"
        else
            bad=$((bad + 1)); echo "VHL-PING $n FAIL"
        fi
        sleep 0.25
    done
    finish "pingloop_ok=$ok pingloop_fail=$bad $(counters) status=ok"
fi

PS=0 PR=0
if [ "$PINGS" -gt 0 ]; then
    out=$(ping -c "$PINGS" -i 0.2 -W 2 "$PEER" 2>&1)
    PS=$(echo "$out" | sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p')
    PR=$(echo "$out" | sed -n 's/.* \([0-9]*\) packets received.*/\1/p')
    say "ping: ${PR:-0}/${PS:-0}"
fi

TXB=0 TXS=- TXT=0 TXR=0
if [ "$TX" -gt 0 ]; then
    if [ "$MD5" = 0 ]; then
        # Zeros from one dd: no process per MiB, no checksum to take first (the receiver
        # knows the digest of zeros).
        printf '#!/bin/sh\ndd if=/dev/zero bs=65536 count=%d 2>/dev/null\n' \
            $((TX / 65536)) > /tmp/send
        chmod +x /tmp/send
    else
        TXS=$(make_send)
    fi
    t0=$(now_cs)
    timeout "$TMO" nc "$PEER" 5001 -e /tmp/send
    TXR=$?
    t1=$(now_cs)
    TXT=$(secs $t0 $t1)
    # The whole stream left only if nc (which became /tmp/send) ended well.
    [ $TXR -eq 0 ] && TXB=$TX
    rm -f /tmp/block
    say "sent $TXB bytes in $TXT s"
fi

RLP=-
if [ "$RELOAD" = 1 ]; then
    # The driver leaves and comes back: removing it resets the device (the back end sees
    # the status go to 0 and its rings stop); loading it negotiates and sets up anew.
    ip link set eth0 down
    rmmod virtio_net || finish "status=rmmod_failed"
    insmod "$M/drivers/net/virtio_net.ko" || finish "status=reload_failed"
    i=0
    while [ ! -e /sys/class/net/eth0 ]; do
        i=$((i + 1))
        [ $i -gt 100 ] && finish "status=no_eth0_after_reload"
        sleep 0.1
    done
    ip link set eth0 up
    ip addr add "$IP/24" dev eth0
    out=$(ping -c "$PINGS" -i 0.2 -W 2 "$PEER" 2>&1)
    RLP=$(echo "$out" | sed -n 's/.* \([0-9]*\) packets received.*/\1/p')
    say "virtio_net reloaded: ping ${RLP:-0}/$PINGS"
fi

RXB=0 RXS=- RXT=0 RXP=0 RXR=0
if [ "$RX" -gt 0 ]; then
    t0=$(now_cs)
    timeout "$TMO" nc "$PEER" 5002 -e /tmp/recv < /dev/null
    RXR=$?
    t1=$(now_cs)
    set -- $(received)
    RXB=$1 RXP=$2 RXS=$3
    RXT=$(secs $t0 $t1)
    say "received $RXB bytes in $RXT s"
fi

# After the transfers (a migration cell moves the guest meanwhile): is the network there?
APR=-
if [ "$AFTER" -gt 0 ]; then
    out=$(ping -c "$AFTER" -i 0.2 -W 2 "$PEER" 2>&1)
    APR=$(echo "$out" | sed -n 's/.* \([0-9]*\) packets received.*/\1/p')
    say "ping after the transfers: ${APR:-0}/$AFTER"
fi

finish "ping_sent=${PS:-0} ping_received=${PR:-0}" \
    "tx_bytes=$TXB tx_rc=$TXR tx_md5=$TXS tx_secs=$TXT" \
    "rx_bytes=$RXB rx_partial=$RXP rx_rc=$RXR rx_md5=$RXS rx_secs=$RXT reload_ping=${RLP:-0}" \
    "after_ping=${APR:-0} $(counters) status=ok"
"""


def fail(msg: str) -> None:
    print(f"build_initramfs: {msg}", file=sys.stderr)
    sys.exit(1)


def kernel_version(requested: str | None) -> str:
    if requested:
        return requested
    # The newest kernel that has both the image and its modules.
    found = []
    for img in BOOT.glob("vmlinuz-*"):
        v = img.name[len("vmlinuz-"):]
        if (MODULES_ROOT / v / "kernel").is_dir():
            found.append(v)
    if not found:
        fail("no /boot/vmlinuz-VERSION with /lib/modules/VERSION: install linux-image-amd64 "
             "(apt-get install --no-install-recommends linux-image-amd64)")

    def key(v: str):
        return [int(x) if x.isdigit() else x for x in re.split(r"[.-]", v)]

    return max(found, key=key)


def inputs(kver: str) -> list[Path]:
    paths = [BOOT / f"vmlinuz-{kver}", BUSYBOX]
    paths += [MODULES_ROOT / kver / "kernel" / m for m in MODULES]
    for p in paths:
        if not p.is_file():
            hint = ("busybox-static" if p == BUSYBOX else "linux-image-amd64")
            fail(f"{p} is missing (Debian package {hint})")
    return paths


def cache_key(kver: str, paths: list[Path]) -> str:
    h = hashlib.sha256()
    h.update(Path(__file__).read_bytes())
    h.update(kver.encode())
    for p in paths:
        st = p.stat()
        h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:12]


def extract_vmlinux(bzimage: Path) -> bytes:
    """The ELF inside a bzImage whose payload is XZ-compressed (Debian's)."""
    data = bzimage.read_bytes()
    start = data.find(b"\xfd7zXZ\x00")
    while start >= 0:
        try:
            elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[start:])
        except lzma.LZMAError:
            elf = b""
        if elf.startswith(b"\x7fELF"):
            return elf
        start = data.find(b"\xfd7zXZ\x00", start + 1)
    fail(f"{bzimage}: no XZ-compressed ELF inside (not a Debian amd64 kernel?)")
    raise AssertionError


def has_pvh_note(elf: bytes) -> bool:
    """A PT_NOTE with name "Xen" and type XEN_ELFNOTE_PHYS32_ENTRY (18): the PVH entry point
    QEMU's -kernel looks for in an ELF."""
    if elf[4] != 2 or elf[5] != 1:  # ELFCLASS64, little-endian
        return False
    phoff = int.from_bytes(elf[0x20:0x28], "little")
    phentsize = int.from_bytes(elf[0x36:0x38], "little")
    phnum = int.from_bytes(elf[0x38:0x3A], "little")
    for i in range(phnum):
        ph = elf[phoff + i * phentsize: phoff + (i + 1) * phentsize]
        if int.from_bytes(ph[0:4], "little") != 4:  # PT_NOTE
            continue
        off = int.from_bytes(ph[8:16], "little")
        end = off + int.from_bytes(ph[32:40], "little")
        while off + 12 <= end:
            namesz, descsz, ntype = (int.from_bytes(elf[off + k: off + k + 4], "little")
                                     for k in (0, 4, 8))
            name = elf[off + 12: off + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and ntype == 18:
                return True
            off += 12 + ((namesz + 3) & ~3) + ((descsz + 3) & ~3)
    return False


class Cpio:
    """A newc archive (what the kernel unpacks), with fixed owners and times."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.ino = 1

    def _entry(self, name: str, mode: int, data: bytes = b"", rdev=(0, 0)) -> None:
        nb = name.encode() + b"\0"
        fields = [self.ino, mode, 0, 0, 2 if stat.S_ISDIR(mode) else 1, 0, len(data), 0, 0,
                  rdev[0], rdev[1], len(nb), 0]
        self.ino += 1
        self.out += b"070701" + b"".join(b"%08X" % f for f in fields) + nb
        self.out += b"\0" * (-len(self.out) % 4)
        self.out += data
        self.out += b"\0" * (-len(self.out) % 4)

    def dir(self, name: str) -> None:
        self._entry(name, stat.S_IFDIR | 0o755)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self._entry(name, stat.S_IFREG | mode, data)

    def chardev(self, name: str, major: int, minor: int) -> None:
        self._entry(name, stat.S_IFCHR | 0o600, rdev=(major, minor))

    def finish(self) -> bytes:
        self._entry("TRAILER!!!", 0)
        self.out += b"\0" * (-len(self.out) % 512)
        return bytes(self.out)


def build(kver: str, dest: Path) -> dict:
    vmlinux = extract_vmlinux(BOOT / f"vmlinuz-{kver}")
    if not has_pvh_note(vmlinux):
        fail("the extracted vmlinux has no Xen/PVH ELF note: QEMU cannot boot it with "
             "-kernel (use the bzImage instead)")
    c = Cpio()
    for d in ("bin", "dev", "proc", "sys", "tmp", "lib", "lib/modules", f"lib/modules/{kver}",
              f"lib/modules/{kver}/kernel"):
        c.dir(d)
    c.chardev("dev/console", 5, 1)
    c.chardev("dev/null", 1, 3)
    c.file("bin/busybox", BUSYBOX.read_bytes(), 0o755)
    made = {f"lib/modules/{kver}/kernel"}
    for m in MODULES:
        parts = Path(m).parts
        for i in range(1, len(parts)):
            d = f"lib/modules/{kver}/kernel/" + "/".join(parts[:i])
            if d not in made:
                c.dir(d)
                made.add(d)
        c.file(f"lib/modules/{kver}/kernel/{m}",
               (MODULES_ROOT / kver / "kernel" / m).read_bytes())
    init = GUEST_INIT.replace("@MODULES@", " ".join(MODULES))
    c.file("init", init.encode(), 0o755)
    cpio = c.finish()
    (dest / "vmlinux").write_bytes(vmlinux)
    (dest / "initramfs.cpio").write_bytes(cpio)
    return {"kernel_version": kver, "vmlinux_bytes": len(vmlinux), "initramfs_bytes": len(cpio),
            "modules": MODULES, "busybox": str(BUSYBOX)}


def default_out_root() -> Path:
    root = os.environ.get("VHOSTLAB_BUILD_ROOT")
    base = Path(root) if root else REPO_ROOT / "build"
    if not base.is_absolute():
        base = REPO_ROOT / base
    return base / "guest"


def ensure_guest(out_root: Path | None = None, kver: str | None = None,
                 force: bool = False) -> tuple[Path, dict, bool]:
    """The guest directory (built now or reused), its manifest, and whether it was built."""
    kver = kernel_version(kver)
    paths = inputs(kver)
    key = cache_key(kver, paths)
    root = out_root or default_out_root()
    dest = root / f"{kver}-{key}"
    manifest = dest / "manifest.json"
    if manifest.is_file() and not force:
        return dest, json.loads(manifest.read_text()), False
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".guest-", dir=root))
    try:
        info = build(kver, tmp)
        info["key"] = key
        (tmp / "manifest.json").write_text(json.dumps(info, indent=2) + "\n")
        if dest.exists():
            shutil.rmtree(dest)
        try:
            os.rename(tmp, dest)
        except OSError:
            # A concurrent build won the race: its result is as good as ours.
            if not (dest / "manifest.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    # Older guests (another kernel, busybox or /init) are not used again: only this
    # script's directories (those with a manifest) go.
    for old in root.iterdir():
        if old != dest and old.is_dir() and (old / "manifest.json").is_file():
            shutil.rmtree(old, ignore_errors=True)
    return dest, json.loads(manifest.read_text()), True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-root", type=Path, help="cache root (default: <build root>/guest)")
    ap.add_argument("--kernel-version", help="default: the newest in /boot with modules")
    ap.add_argument("--force", action="store_true", help="rebuild even when cached")
    ap.add_argument("--json", action="store_true", help="print a JSON object")
    a = ap.parse_args()
    dest, info, built = ensure_guest(a.out_root, a.kernel_version, a.force)
    if a.json:
        print(json.dumps({"dir": str(dest), "built": built, **info}))
    else:
        print(f"{'built' if built else 'cached'}: {dest}", file=sys.stderr)
        print(dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
