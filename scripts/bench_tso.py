#!/usr/bin/python3
"""The TCP throughput of a Linux guest through `vhostlab-fast serve` with and without TSO
(issue 56): serve --offloads on (checksum offload and TSO negotiated) against --offloads off
(the guest segments and checksums itself), in one run, interleaved -- on, off, on, off ... --
so that the machine's slow and fast spells fall on both.

Each run is one of harness/test_interop_qemu.py's cells: a network namespace made for it,
`vhostlab-fast serve --mode tap:...` inside it with harness/guest/host_peer.py (a TCP sink
and a source), QEMU 7.2 (TCG) booting the Linux guest of harness/guest/build_initramfs.py.
The guest sends --mib MiB of zeros (one dd) to the sink, then receives --mib MiB from the
source, and times each transfer itself (/proc/uptime, 10 ms steps); it counts what it
receives but does not checksum it (md5sum under TCG costs more than the network, a process
per MiB more than that: vhl_md5=0). Checked per run: the byte counts both ways, the sink's
md5 against that of as many zero bytes, the offloads negotiated (all
of CSUM, GUEST_CSUM, HOST/GUEST_TSO4/6/ECN when on, none when off) and, as the proof of
TSO, frames over 1518 bytes both ways when on and none when off (serve's size bins).

Reported: per direction, each setting's median throughput (MB/s, 10^6 bytes), the ratio of
the medians, and the median of the per-pair ratios (on / off of the same pair); the aim is
2x. Writes --json-out and --md-out (default reports/tso-throughput.json and .md); progress
on stderr, the table on stdout. Needs root (namespace, TAP), qemu-system-x86,
linux-image-amd64, busybox-static (./lab's packages). Exit 0 when every run passed its
checks, 1 when one failed, 2 on a usage error. Not a timed test: run it on a quiet machine
(the load average is recorded).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GUEST_DIR = REPO / "harness" / "guest"
HOST_PEER = GUEST_DIR / "host_peer.py"
HOST_IP, GUEST_IP = "10.99.0.1", "10.99.0.2"  # inside each run's namespace only
MIB = 1 << 20
MAX_PLAIN = 1518  # the largest frame without segmentation offload (serve's size bins)
# Feature bits the guest negotiates with offloads on (QEMU 7.2, Linux 6.1): CSUM,
# GUEST_CSUM, GUEST_TSO4/6, GUEST_ECN, HOST_TSO4/6, HOST_ECN.
TSO_BITS = (0, 1, 7, 8, 9, 11, 12, 13)
AIM = 2.0
ZERO_MIB = bytes(MIB)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vhostlab-fast", type=Path,
                    default=Path(os.environ.get("VHOSTLAB_FAST_BIN",
                                                REPO / "build/release/cli/vhostlab-fast")),
                    help="the serve program (default $VHOSTLAB_FAST_BIN, else "
                         "build/release/cli/vhostlab-fast)")
    ap.add_argument("--pairs", type=int, default=5,
                    help="on/off pairs, run interleaved (default 5; the report wants 3+)")
    ap.add_argument("--mib", type=int, default=128,
                    help="MiB each way per run (default 128)")
    ap.add_argument("--ring", choices=("split", "packed"), default="split")
    ap.add_argument("--no-mrg-rxbuf", action="store_true",
                    help="the guest's device without mergeable receive buffers")
    ap.add_argument("--json-out", type=Path, default=REPO / "reports" / "tso-throughput.json")
    ap.add_argument("--md-out", type=Path, default=REPO / "reports" / "tso-throughput.md")
    ap.add_argument("--timeout", type=float, default=180,
                    help="seconds per run, boot to power-off (default 180)")
    a = ap.parse_args(argv)
    if a.pairs < 1:
        ap.error(f"--pairs {a.pairs}: at least 1")
    if not 1 <= a.mib <= 1024:
        ap.error(f"--mib {a.mib}: 1..1024")
    if not a.vhostlab_fast.is_file():
        ap.error(f"--vhostlab-fast {a.vhostlab_fast}: no such program (build it first: "
                 "cmake --build build/release)")
    return a


def load_guest_builder():
    spec = importlib.util.spec_from_file_location("build_initramfs",
                                                  GUEST_DIR / "build_initramfs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def sh(*argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(["timeout", "-s", "KILL", str(int(timeout)), *argv],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)


def json_lines(path: Path) -> list[dict]:
    out = []
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def wait_until(cond, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return False


def timeout_child(proc: subprocess.Popen) -> int | None:
    """The process timeout(1) runs (its only child), to signal it and nothing else."""
    for _ in range(100):
        try:
            kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        except OSError:
            return None
        if kids:
            return int(kids[0])
        if proc.poll() is not None:
            return None
        time.sleep(0.01)
    return None


def stop(proc: subprocess.Popen | None, sig=signal.SIGKILL) -> None:
    """End a process this script started under timeout(1): its own process group."""
    if proc is not None and proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        proc.wait()


class RunError(Exception):
    pass


def one_run(a, guest: dict, n: int, offloads: bool, workdir: Path) -> dict:
    """One cell: returns its measurements, or raises RunError saying what went wrong."""
    ns, tap, sock = f"vhl-tsob-{os.getpid()}-{n}", f"vhlb{n}", workdir / f"vu{n}.sock"
    logs = {k: workdir / f"{n}.{k}" for k in ("serve", "peer", "console", "qemu")}
    files = {k: open(p, "w") for k, p in logs.items()}
    nbytes = a.mib * MIB
    serve = peer = qemu = None
    made = False
    try:
        if sh("ip", "netns", "add", ns).returncode != 0:
            raise RunError(f"cannot create network namespace {ns} (root needed)")
        made = True
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        serve_argv = [str(a.vhostlab_fast), "serve", "--socket", str(sock), "--mode",
                      f"tap:{tap}", "--json", "--offloads", "on" if offloads else "off"]
        serve = subprocess.Popen(["timeout", "-s", "KILL", str(int(a.timeout + 60)), "ip",
                                  "netns", "exec", ns, *serve_argv],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=files["serve"], text=True)
        if not wait_until(lambda: serve.poll() is not None or any(
                e.get("event") in ("listening", "error") for e in json_lines(logs["serve"])),
                20) or serve.poll() is not None:
            raise RunError(f"serve did not start: {logs['serve'].read_text()[-2000:]}")
        if sh("ip", "-n", ns, "addr", "add", f"{HOST_IP}/24", "dev", tap).returncode != 0:
            raise RunError(f"cannot address {tap} in {ns}")
        peer = subprocess.Popen(["timeout", "-s", "KILL", str(int(a.timeout + 30)), "ip",
                                 "netns", "exec", ns, sys.executable, str(HOST_PEER),
                                 "--addr", HOST_IP, "--bytes", str(nbytes), "--timeout",
                                 str(int(a.timeout))],
                                stdin=subprocess.DEVNULL, stdout=files["peer"],
                                stderr=subprocess.STDOUT, text=True)
        if not wait_until(lambda: peer.poll() is not None or any(
                e.get("event") == "ready" for e in json_lines(logs["peer"])), 20):
            raise RunError("the host peer did not start")
        g = Path(guest["dir"])
        dev = "virtio-net-pci,netdev=n0,mac=52:54:00:12:34:56,vectors=0"
        dev += ",packed=on" if a.ring == "packed" else ""
        dev += ",mrg_rxbuf=off" if a.no_mrg_rxbuf else ""
        qemu_argv = [
            "qemu-system-x86_64", "-accel", "tcg", "-m", "128",
            "-object", "memory-backend-memfd,id=mem,size=128M,share=on",
            "-numa", "node,memdev=mem", "-chardev", f"socket,id=c0,path={sock}",
            "-netdev", "type=vhost-user,id=n0,chardev=c0", "-device", dev,
            "-kernel", str(g / "vmlinux"), "-initrd", str(g / "initramfs.cpio"),
            "-append", (f"console=ttyS0 quiet panic=-1 vhl_ip={GUEST_IP} vhl_peer={HOST_IP} "
                        f"vhl_tx={nbytes} vhl_rx=1 vhl_pings=1 vhl_md5=0 "
                        f"vhl_timeout={int(a.timeout / 2)}"),
            "-display", "none", "-no-reboot", "-nodefaults", "-serial", "stdio",
        ]
        qemu = subprocess.Popen(["timeout", "-s", "KILL", str(int(a.timeout)), *qemu_argv],
                                stdin=subprocess.DEVNULL, stdout=files["console"],
                                stderr=files["qemu"])
        qemu.wait()
        try:
            peer.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        pid = timeout_child(serve)
        if pid is not None:
            os.kill(pid, signal.SIGINT)
        out, _ = serve.communicate(timeout=15)
        doc = json.loads(out)
        for f in files.values():
            f.flush()
        m = re.findall(r"^VHL-RESULT (.*)$", logs["console"].read_text(errors="replace"),
                       re.M)
        if not m:
            raise RunError(f"no VHL-RESULT (qemu exit {qemu.returncode}): "
                           f"{logs['console'].read_text(errors='replace')[-1500:]}")
        res = dict(kv.split("=", 1) for kv in m[-1].split() if "=" in kv)
        peer_ev = {e["event"]: e for e in json_lines(logs["peer"])}
        return check(res, peer_ev, doc, offloads, nbytes)
    finally:
        stop(qemu)
        if serve is not None and serve.poll() is None:
            pid = timeout_child(serve)
            if pid is not None:
                os.kill(pid, signal.SIGINT)
            try:
                serve.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        stop(serve)
        stop(peer)
        if made:
            sh("ip", "netns", "del", ns)
        for f in files.values():
            f.close()


def check(g: dict, peer: dict, serve: dict, offloads: bool, nbytes: int) -> dict:
    """The run's figures, after the checks that make them mean something."""
    sink = peer.get("sink", {})
    if g.get("status") != "ok" or g.get("tx_rc") != "0" or g.get("rx_rc") != "0":
        raise RunError(f"the guest's transfers failed: {g}")
    if int(g["tx_bytes"]) != nbytes or sink.get("bytes") != nbytes:
        raise RunError(f"guest->host: the guest sent {g['tx_bytes']}, the sink got "
                       f"{sink.get('bytes')} of {nbytes}")
    zeros = hashlib.md5()
    for _ in range(nbytes // MIB):
        zeros.update(ZERO_MIB)
    if sink.get("md5") != zeros.hexdigest():
        raise RunError("guest->host data differ (md5 of what the sink got is not that of "
                       f"{nbytes} zero bytes)")
    if int(g["rx_bytes"]) != nbytes or g["rx_partial"] != "0":
        raise RunError(f"host->guest: the guest received {g['rx_bytes']} of {nbytes}")
    feats = g.get("features", "")
    got = [b for b in TSO_BITS if b < len(feats) and feats[b] == "1"]
    if got != (list(TSO_BITS) if offloads else []):
        raise RunError(f"offloads {'on' if offloads else 'off'}, but the guest negotiated "
                       f"feature bits {got}")
    q = serve["ports"][0]["queues"][0]
    big = (q["rx_size_bins"]["gt1518"], q["tx_size_bins"]["gt1518"])
    if offloads and not all(big):
        raise RunError(f"TSO negotiated but frames over {MAX_PLAIN} B (out, in): {big}")
    if not offloads and any(big):
        raise RunError(f"no TSO, yet frames over {MAX_PLAIN} B (out, in): {big}")
    tx_secs, rx_secs = float(g["tx_secs"]), float(g["rx_secs"])
    if tx_secs <= 0 or rx_secs <= 0:
        raise RunError(f"transfer times {tx_secs} / {rx_secs} s")
    return {
        "offloads": "on" if offloads else "off",
        "guest_to_host_mbs": round(nbytes / tx_secs / 1e6, 2),
        "host_to_guest_mbs": round(nbytes / rx_secs / 1e6, 2),
        "guest_to_host_secs": tx_secs, "host_to_guest_secs": rx_secs,
        "features": serve["ports"][0]["features"],
        "frames_from_guest": q["rx_packets"], "frames_to_guest": q["tx_packets"],
        "frames_over_1518_from_guest": big[0], "frames_over_1518_to_guest": big[1],
        "guest_tcp_retransmits": int(g.get("tcp_retrans", "0") or 0),
    }


def summarize(runs: list[dict]) -> dict:
    out = {}
    for way in ("guest_to_host", "host_to_guest"):
        key = f"{way}_mbs"
        on = [r[key] for r in runs if r["offloads"] == "on"]
        off = [r[key] for r in runs if r["offloads"] == "off"]
        pairs = {}
        for r in runs:
            pairs.setdefault(r["pair"], {})[r["offloads"]] = r[key]
        paired = [p["on"] / p["off"] for p in pairs.values() if "on" in p and "off" in p]
        med_on = statistics.median(on) if on else None
        med_off = statistics.median(off) if off else None
        ratio = med_on / med_off if med_on and med_off else None
        out[way] = {
            "on_mbs": on, "off_mbs": off,
            "median_on_mbs": med_on, "median_off_mbs": med_off,
            "ratio_of_medians": round(ratio, 3) if ratio else None,
            "paired_ratios": [round(x, 3) for x in paired],
            "median_paired_ratio": round(statistics.median(paired), 3) if paired else None,
            "aim_met": bool(ratio and ratio >= AIM),
        }
    return out


def fmt(x, spec=".1f") -> str:
    return "-" if x is None else format(x, spec)


def table(summary: dict) -> str:
    rows = ["| direction | TSO on, MB/s (median) | TSO off, MB/s (median) | ratio of medians "
            "| paired ratios (median) | 2x |", "|---|---|---|---|---|---|"]
    for way, name in (("guest_to_host", "guest -> host"), ("host_to_guest", "host -> guest")):
        s = summary[way]
        rows.append(
            f"| {name} | {fmt(s['median_on_mbs'])} ({', '.join(fmt(x) for x in s['on_mbs'])})"
            f" | {fmt(s['median_off_mbs'])} ({', '.join(fmt(x) for x in s['off_mbs'])}) | "
            f"{fmt(s['ratio_of_medians'], '.2f')} | "
            f"{', '.join(fmt(x, '.2f') for x in s['paired_ratios'])} "
            f"({fmt(s['median_paired_ratio'], '.2f')}) | {'met' if s['aim_met'] else 'not met'}"
            " |")
    return "\n".join(rows)


def runs_table(runs: list[dict]) -> str:
    rows = ["| pair | offloads | guest -> host MB/s | host -> guest MB/s | frames from the guest "
            f"(over {MAX_PLAIN} B) | frames to it (over {MAX_PLAIN} B) | guest TCP retransmits |",
            "|---|---|---|---|---|---|---|"]
    for r in runs:
        rows.append(f"| {r['pair']} | {r['offloads']} | {r['guest_to_host_mbs']} | "
                    f"{r['host_to_guest_mbs']} | {r['frames_from_guest']} "
                    f"({r['frames_over_1518_from_guest']}) | {r['frames_to_guest']} "
                    f"({r['frames_over_1518_to_guest']}) | {r['guest_tcp_retransmits']} |")
    return "\n".join(rows)


def environment(a, guest: dict) -> dict:
    def out(*argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=10,
                                  cwd=REPO).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "git_commit": out("git", "rev-parse", "HEAD"),
        "git_dirty": bool(out("git", "status", "--porcelain", "--untracked-files=no")),
        "serve": (str(a.vhostlab_fast.resolve().relative_to(REPO))
                  if a.vhostlab_fast.resolve().is_relative_to(REPO) else str(a.vhostlab_fast)),
        "serve_sha256": hashlib.sha256(a.vhostlab_fast.read_bytes()).hexdigest()[:12],
        "qemu": out("qemu-system-x86_64", "--version").splitlines()[0:1],
        "host_kernel": platform.release(),
        "guest_kernel": guest.get("kernel_version"),
        "cpus": os.cpu_count(),
    }


def main(argv=None) -> int:
    a = parse_args(argv)
    for prog in ("qemu-system-x86_64", "ip"):
        if shutil.which(prog) is None:
            log(f"bench_tso: {prog} not found (./lab installs qemu-system-x86, iproute2)")
            return 1
    if os.geteuid() != 0:
        log("bench_tso: needs root (a network namespace and a TAP device per run)")
        return 1
    gdir, ginfo, _ = load_guest_builder().ensure_guest()
    guest = {"dir": str(gdir), **ginfo}
    env = environment(a, guest)
    env["loadavg_before"] = os.getloadavg()
    runs, failures = [], []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vhl-tso-bench-") as d:
        n = 0
        for pair in range(a.pairs):
            for offloads in (True, False):
                n += 1
                label = f"pair {pair + 1}/{a.pairs} offloads {'on' if offloads else 'off'}"
                try:
                    r = one_run(a, guest, n, offloads, Path(d))
                except (RunError, OSError, ValueError, KeyError,
                        subprocess.TimeoutExpired) as e:
                    log(f"bench_tso: {label}: FAILED: {e}")
                    failures.append({"pair": pair + 1, "offloads": offloads, "error": str(e)})
                    continue
                r["pair"] = pair + 1
                runs.append(r)
                log(f"bench_tso: {label}: guest->host {r['guest_to_host_mbs']} MB/s, "
                    f"host->guest {r['host_to_guest_mbs']} MB/s; frames from the guest "
                    f"{r['frames_from_guest']} ({r['frames_over_1518_from_guest']} over "
                    f"{MAX_PLAIN} B), to it {r['frames_to_guest']} "
                    f"({r['frames_over_1518_to_guest']})")
    env["loadavg_after"] = os.getloadavg()
    summary = summarize(runs)
    doc = {"config": {"mib_each_way": a.mib, "pairs": a.pairs, "ring": a.ring,
                      "mergeable": not a.no_mrg_rxbuf, "order": "on, off per pair",
                      "aim_ratio": AIM},
           "environment": env, "seconds": round(time.monotonic() - t0, 1),
           "summary": summary, "runs": runs, "failures": failures}
    a.json_out.parent.mkdir(parents=True, exist_ok=True)
    a.json_out.write_text(json.dumps(doc, indent=2) + "\n")
    tab = table(summary)
    md = (
        "# TCP throughput of a Linux guest with and without TSO\n\n"
        f"`scripts/bench_tso.py --pairs {a.pairs} --mib {a.mib} --ring {a.ring}"
        f"{' --no-mrg-rxbuf' if a.no_mrg_rxbuf else ''}`, {env['date']}, commit "
        f"{env['git_commit'][:12]}{' (dirty)' if env['git_dirty'] else ''}, vhostlab-fast "
        f"sha256 {env['serve_sha256']}. {' '.join(env['qemu'])} under TCG, guest Linux "
        f"{env['guest_kernel']}, host kernel {env['host_kernel']}, {env['cpus']} CPUs; load "
        f"average before {env['loadavg_before'][0]:.2f}, after {env['loadavg_after'][0]:.2f}."
        "\n\nEach run boots the guest against `vhostlab-fast serve --mode tap:...` in a "
        f"namespace of its own; the guest sends {a.mib} MiB (zeros, one `dd`) to a TCP sink "
        f"in the namespace, then receives {a.mib} MiB (`dd` to /dev/null), timing each "
        "itself. `--offloads on` (checksum offload "
        "and TSO negotiated) and `--offloads off` alternate, on first in each pair. MB/s "
        "are 10^6 bytes a second; the paired ratios are on / off within a pair. Aim: 2x.\n\n"
        f"{tab}\n\n{runs_table(runs)}\n\n"
        f"{len(runs)} runs passed their checks (byte counts both ways, the guest->host md5, "
        "the offloads negotiated, frames over 1518 B both ways with TSO and none without)"
        f"{'' if not failures else f'; {len(failures)} failed: see the JSON'}. Runs: "
        f"[{a.json_out.name}]({a.json_out.name}).\n")
    a.md_out.parent.mkdir(parents=True, exist_ok=True)
    a.md_out.write_text(md)
    print(tab)
    return 1 if failures or not runs else 0


if __name__ == "__main__":
    sys.exit(main())
