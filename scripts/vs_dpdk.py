#!/usr/bin/python3
"""vhostlab serve side by side with DPDK's own vhost back end, under the same real front end.

The front end is DPDK 22.11 testpmd driving a virtio-user port. The back end, in turn, is
  dpdk      testpmd with a net_vhost port (DPDK's vhost library, the production reference),
  vhostlab  `vhostlab-fast serve` (the production program: serve on the production core),
  null      `vhostlab-fast serve --mode null`: chains go back unread, nothing is copied -- the
            ceiling the front end allows (guest->host cells only);
  touch     `vhostlab-fast serve --mode touch`: null, reading the first byte of each packet --
            the ceiling for any back end that reads its packets (guest->host cells: a
            back end that copies the packet reads that line too).
over {split, packed} x {mergeable on, off} x {in-order on, off} x {64, 1518 B} x
{guest->host, host->guest}: 32 cells. Each run measures the front end's packet rate over a
fixed window after a warm-up; runs are interleaved (for each repetition, for each cell, the
back ends one after the other, in alternating order), and each cell reports the median, min
and max over the repetitions and the ratio vhostlab / dpdk of the medians. A memcpy
ceiling (vl_memcpy_ceiling, built beside vhostlab) is measured once. Around each run the
placement probe (vl_cpu_pingpong, also beside vhostlab) times a cache line's round trip
between the two CPUs, and each cell also gets medians and ratios over the runs whose CPUs were
close together and over those whose CPUs were far apart (see PLACEMENT_FAR_NS). With
--fill K, more runs follow the repetitions wherever a cell's per-placement figures rest on
fewer than K pairs of DPDK and vhostlab runs taken back to back, both steady there, or K
such pairs of DPDK and touch runs (Bench.fill).

Writes OUT/vs-dpdk.md (table and method), OUT/vs-dpdk.png (plot) and OUT/vs-dpdk.json (every
run). Progress goes to stderr. Exit status 0 when every run measured traffic, 1 otherwise,
2 on a usage error. See reports/README.md.

Debian packages only: dpdk-dev and librte-net-virtio23 (testpmd and its drivers), python3,
python3-matplotlib (the plot), util-linux (taskset), coreutils (timeout, stdbuf).
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import hashlib
import itertools
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RINGS = ("split", "packed")
ONOFF = (1, 0)
SIZES = (64, 1518)
DIRS = ("g2h", "h2g")  # guest->host: the front end transmits; host->guest: it receives
DIR_WORDS = {"g2h": "guest→host", "h2g": "host→guest"}
TARGET = 1.10
# serve's --zero-copy leaves packets shorter than this to the copy (cli/serve.h
# SERVE_ZC_MIN_LEN): a zero-copy run only differs from a copying one at this size or more.
ZC_MIN_LEN = 512

# Two CPUs: the front end on one, the back end on the other. Each testpmd runs its main and
# its forwarding lcore on its CPU (the main lcore sleeps in the command line meanwhile).
FE_CPU = 1
BE_CPU = 0

# The placement probe (vl_cpu_pingpong): a cache line's round trip between the two CPUs.
# This VM's host moves its two virtual CPUs between a close placement (about 45 ns) and a far
# one (about 430 ns, another core complex), every few seconds to minutes; far, every pair of
# front end and back end runs at roughly half its close rate or less. A run is classed by the
# probes just before the front end starts forwarding and just after it stops (Bench.probe: a
# polling serve is paused for them): both under the line, close; both over, far; else it
# moved during the run (mixed), and it is left out of the per-placement figures. Probing
# before serve and its front end start instead left about 3 s of setup unprobed, and runs
# that spent their whole window in the other placement were classed by the wrong one.
PLACEMENT_FAR_NS = 250.0
# The host can also move the CPUs away and back within one run, which the probes around it
# do not see (a run probed close at 28 ns both sides ran at a far run's rate). So the window
# is read in intervals of about this many seconds, and a run whose interval rates differ by
# more than STEADY_MAX (highest / lowest) is unsteady: left out of the per-placement
# figures as mixed runs are. Within one placement, intervals of a run agree within a few %.
STEADY_INTERVAL = 0.5
STEADY_MAX = 1.25

QUICK_CELLS = "split-mrg1-ord1-1518-g2h,packed-mrg0-ord0-1518-h2g"
START_TIMEOUT = 30.0  # testpmd's EAL start with --no-huge takes 1-2 s; more on a busy machine
PROC_LIMIT = 600  # seconds: timeout(1) kills anything of ours that outlives this
# The fill keeps a configuration's processes up while it has cells to fill; it starts them
# again once they are this old, before PROC_LIMIT kills them.
CONFIG_MAX_AGE = PROC_LIMIT - 120
# serve prints its live statistics this often during our runs; each line carries the
# share of the interval its loop spent in rounds that moved nothing (idle_share).
SERVE_STATS_INTERVAL = 0.25


@dataclass(frozen=True)
class Cell:
    ring: str
    mrg: int
    ord: int
    size: int
    dir: str

    @property
    def id(self) -> str:
        return f"{self.ring}-mrg{self.mrg}-ord{self.ord}-{self.size}-{self.dir}"

    @property
    def config(self) -> tuple:
        return (self.ring, self.mrg, self.ord)

    def backends(self) -> tuple:
        # The null back end has no host->guest meaning (docs/serve.md, null mode). touch
        # reads one cache line of the packet, the one the front end writes its headers to:
        # the whole of a 64-byte packet; 1 line in 24 of a 1518-byte one, a looser bound but
        # still one, since a back end that copies the packet reads that line too.
        # zc is vhostlab with --zero-copy: packets reference the guest's buffers, nothing is
        # copied. DPDK 22.11 has no such option, so it is shown beside the cells, never
        # judged: DPDK copies, vhostlab's judged runs copy too.
        if self.dir == "h2g":
            return ("dpdk", "vhostlab")
        return ("dpdk", "vhostlab", "null", "touch") + (
            ("zc",) if self.size >= ZC_MIN_LEN else ())


ALL_CELLS = [Cell(r, m, o, s, d) for r, m, o, s, d in
             itertools.product(RINGS, ONOFF, ONOFF, SIZES, DIRS)]


def log(msg: str):
    print(msg, file=sys.stderr, flush=True)


class RunError(Exception):
    """A run that did not measure traffic; the message says what was seen."""


def tail(path: Path, n: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return "(no file)"


def timeout_child(pid: int, wait: float = 5.0, alive=None) -> int | None:
    """The one child of timeout(1) running as PID, or None if none shows up within WAIT s
    (or as soon as ALIVE, when given, returns False: the process is gone).

    timeout(1) forks the command it runs: signals and /proc reads meant for the command
    (testpmd, serve) must go to that child, which may not exist yet just after the start.
    """
    path = Path(f"/proc/{pid}/task/{pid}/children")
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and (alive is None or alive()):
        try:
            kids = path.read_text().split()
        except OSError:
            kids = []
        if kids:
            return int(kids[0])
        time.sleep(0.01)
    return None


class Proc:
    """A process of ours, in a session of its own under timeout(1): killing the group kills
    exactly what we started."""

    def __init__(self, argv: list[str], logpath: Path, stdin=None, stdout=None):
        self.argv = argv
        self.log = logpath
        self._logf = open(logpath, "w")
        self.proc = subprocess.Popen(
            ["timeout", "-s", "KILL", str(PROC_LIMIT), *argv],
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=stdout if stdout is not None else self._logf,
            stderr=self._logf,
            text=True,
            start_new_session=True,
        )

    def child_pid(self) -> int:
        """The process timeout(1) runs (taskset and stdbuf exec it, keeping the pid)."""
        pid = timeout_child(self.proc.pid)
        if pid is None:
            raise RunError(f"no child under timeout(1) pid {self.proc.pid}")
        return pid

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self._logf.close()


STATS_BLOCK = re.compile(
    r"NIC statistics for port 0.*?RX-packets:\s+(\d+).*?TX-packets:\s+(\d+).*?"
    r"Rx-pps:\s+(\d+).*?Tx-pps:\s+(\d+)", re.S)
# What testpmd prints when forwarding stops: the run's packets sent and those its forwarding
# engine made but dropped, because the port took fewer than it offered (guest->host: the
# virtio ring had no room, the back end had not given enough descriptors back).
FWD_BLOCK = re.compile(
    r"Forward statistics for port 0\s.*?TX-packets:\s+(\d+)\s+TX-dropped:\s+(\d+)", re.S)


class TestPmd(Proc):
    """dpdk-testpmd in interactive mode: commands on stdin, output (line-buffered through
    stdbuf, so a command's answer can be read while it runs) in a log file."""

    def __init__(self, name: str, workdir: Path, prefix: str, cpu: int, vdev: str):
        self.name = name
        argv = [
            "stdbuf", "-oL", "taskset", "-c", str(cpu), "dpdk-testpmd",
            "--no-huge", "-m", "256", "--no-pci", f"--file-prefix={prefix}",
            "--lcores", f"0@{cpu},1@{cpu}", "--vdev", vdev,
            "--", "-i", "--total-num-mbufs=16384", "--forward-mode=rxonly",
        ]
        super().__init__(argv, workdir / f"{name}.log", stdin=subprocess.PIPE)
        self._seen = 0  # stats blocks already read

    def cmd(self, *lines: str):
        if self.proc.poll() is not None:
            raise RunError(f"{self.name} exited ({self.proc.returncode})\n{tail(self.log)}")
        self.proc.stdin.write("".join(line + "\n" for line in lines))
        self.proc.stdin.flush()

    def stats(self, timeout: float = START_TIMEOUT) -> dict:
        """`show port stats 0`: cumulative RX/TX packets and testpmd's own pps since the
        previous show (timed by testpmd's clock, not ours). Also a barrier: every command
        sent before it has been carried out when it returns."""
        self.cmd("show port stats 0")
        want = self._seen + 1
        deadline = time.monotonic() + timeout
        while True:
            blocks = STATS_BLOCK.findall(self.log.read_text(errors="replace"))
            if len(blocks) >= want:
                break
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RunError(f"{self.name}: no port statistics\n{tail(self.log)}")
            time.sleep(0.01)
        self._seen = len(blocks)
        rx, tx, rx_pps, tx_pps = (int(v) for v in blocks[want - 1])
        return {"rx": rx, "tx": tx, "rx_pps": rx_pps, "tx_pps": tx_pps,
                "t": time.monotonic()}

    def fwd_stats(self) -> dict:
        """The forward statistics `stop` printed last (call after a barrier that follows
        the stop): what the front end's txonly sent over that forwarding run, warm-up
        included, and what it made but dropped for want of room in the ring."""
        blocks = FWD_BLOCK.findall(self.log.read_text(errors="replace"))
        if not blocks:
            raise RunError(f"{self.name}: no forward statistics\n{tail(self.log)}")
        sent, dropped = (int(v) for v in blocks[-1])
        return {"fe_sent": sent, "fe_dropped": dropped}

    def quit(self):
        if self.proc.poll() is None:
            try:
                self.cmd("stop", "quit")
            except (RunError, BrokenPipeError):
                pass

    def wait_gone(self, timeout: float = 15.0):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        self.kill()


def serve_program(vhostlab: Path) -> Path:
    """The program serve runs from: vhostlab-fast (the production program) beside the given
    vhostlab, or that path itself when it names vhostlab-fast. vhostlab, the lab program,
    serves on the lab build of the core: never measured here."""
    return vhostlab if vhostlab.name == "vhostlab-fast" else vhostlab.parent / "vhostlab-fast"


class Serve(Proc):
    """`vhostlab-fast serve ... --json` listening on sock: events on stderr (the log), the
    final JSON statistics on stdout."""

    def __init__(self, vhostlab: Path, workdir: Path, n: int, sock: Path, mode: str, size: int,
                 extra: list[str]):
        self.sock = sock
        argv = ["taskset", "-c", str(BE_CPU), str(serve_program(vhostlab)), "serve",
                "--socket", str(sock),
                "--mode", mode, "--size", str(size), "--json",
                "--stats-interval", str(SERVE_STATS_INTERVAL), *extra]
        # serve's event times count from its own start, a few milliseconds after this.
        self.t0 = time.monotonic()
        super().__init__(argv, workdir / f"serve{n}.err", stdout=subprocess.PIPE)

    def events(self, name: str) -> list[dict]:
        out = []
        for line in tail(self.log, 10**7).splitlines():
            if line.startswith("{"):
                try:
                    ev = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if ev.get("event") == name:
                    out.append(ev)
        return out

    def wait_socket(self):
        deadline = time.monotonic() + START_TIMEOUT
        while not self.sock.exists():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RunError(f"serve made no socket {self.sock}\n{tail(self.log)}")
            time.sleep(0.005)

    # How long the front end may take to set up its rings (a subclass running serve under
    # valgrind allows more).
    start_timeout = START_TIMEOUT

    def wait_running(self) -> dict:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            ev = self.events("running")
            if ev:
                return ev[0]
            if self.proc.poll() is not None:
                break
            time.sleep(0.01)
        raise RunError(f"serve never saw the front end's rings ready\n{tail(self.log)}")

    def exe(self) -> str:
        """What the serve process runs (vhostlab-fast), as the kernel names it."""
        try:
            return os.readlink(f"/proc/{self.child_pid()}/exe")
        except OSError:
            return "?"

    def stop(self) -> dict:
        if self.proc.poll() is None:
            os.kill(self.child_pid(), signal.SIGINT)
        try:
            out, _ = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RunError(f"serve did not stop on SIGINT\n{tail(self.log)}")
        self._logf.close()
        if self.proc.returncode != 0:
            raise RunError(f"serve exited {self.proc.returncode}\n{out}\n{tail(self.log)}")
        return json.loads(out)


def window_idle(stats: list[dict], start: float, end: float,
                interval: float = SERVE_STATS_INTERVAL) -> float | None:
    """The share of [start, end] (seconds on serve's clock) serve's loop spent idle: the mean
    idle_share of the statistics lines whose whole interval lies inside the window (one
    line per queue pair and interval; ours have one). None when no interval fits."""
    inside = [ev["idle_share"] for ev in stats
              if "idle_share" in ev and ev["time"] - interval >= start and ev["time"] <= end]
    return statistics.mean(inside) if inside else None


def median_min_max(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


class Bench:
    """One invocation: the processes of one ring configuration at a time, the runs, the
    results."""

    def __init__(self, args):
        self.a = args
        self.workdir = Path(tempfile.mkdtemp(prefix="vhl-vsd-"))  # short socket paths
        self.prefixes: list[str] = []
        self.counter = itertools.count()
        self.runs: list[dict] = []
        self.negotiated: dict[str, dict] = {}
        self.serve_exe = None
        # The probe's directory, fixed here: serve_ab.py points a.vhostlab at other builds.
        self.probe_from = args.vhostlab

    def prefix(self) -> str:
        p = f"vsd{os.getpid()}-{next(self.counter)}"
        self.prefixes.append(p)
        return p

    # --- one ring configuration: two front ends, DPDK's back end ---------------------------

    def front_end(self, name: str, cfg: tuple, sock: Path, server: bool) -> TestPmd:
        """testpmd with a virtio-user port on the front-end CPU: the cell's ring options."""
        ring, mrg, ord_ = cfg
        vdev = (f"net_virtio_user0,path={sock},queues=1,packed_vq={int(ring == 'packed')},"
                f"mrg_rxbuf={mrg},in_order={ord_}" + (",server=1" if server else ""))
        return TestPmd(name, self.workdir, self.prefix(), FE_CPU, vdev)

    def start_config(self, cfg: tuple) -> dict:
        """The DPDK pair of a ring configuration: a front end (virtio-user server) and
        DPDK's back end (net_vhost client) connected once, for all of the configuration's
        cells: started together, ready when both answered a command. While serve runs, the
        pair sleeps (forwarding stopped, main lcores blocked on stdin)."""
        n = next(self.counter)
        socks = {"d": self.workdir / f"d{n}.sock"}
        procs = {"fe_d": self.front_end(f"fe_d{n}", cfg, socks["d"], server=True)}
        try:
            # net_vhost in client mode retries until the front end's socket is there.
            # (DPDK 22.11's net_vhost has no dequeue-zero-copy option any more: iface,
            # queues, client, iommu-support, postcopy-support, tso, linear-buffer,
            # ext-buffer, legacy-ol-flags; all left at their defaults.)
            procs["be_d"] = TestPmd(f"be_d{n}", self.workdir, self.prefix(), BE_CPU,
                                    f"net_vhost0,iface={socks['d']},queues=1,client=1")
            # A virtio-user server waits for its back end before testpmd takes commands.
            for k in ("be_d", "fe_d"):
                procs[k].stats()
            deadline = time.monotonic() + START_TIMEOUT
            while "ready for processing" not in procs["be_d"].log.read_text(errors="replace"):
                if time.monotonic() > deadline:
                    raise RunError(f"DPDK's back end never connected\n{tail(procs['be_d'].log)}")
                time.sleep(0.02)
            m = re.findall(r"negotiated Virtio features: (0x[0-9a-f]+)",
                           procs["be_d"].log.read_text(errors="replace"))
            self.negotiated.setdefault("-".join(map(str, cfg)), {})["dpdk"] = m[-1] if m else "?"
        except BaseException:
            self.stop_config(procs)
            raise
        procs["socks"] = socks
        return procs

    def stop_config(self, procs: dict):
        pmds = [p for p in procs.values() if isinstance(p, TestPmd)]
        for p in pmds:
            p.quit()
        for p in pmds:
            p.wait_gone()

    # --- one run ---------------------------------------------------------------------------

    def probe(self, serve: Serve | None = None) -> float | None:
        """The placement probe, taken as close to the window as it can be: with both CPUs
        free of our pollers. Forwarding is stopped then, so testpmd's lcores sleep; a
        serve that polls is stopped (SIGSTOP) for the few milliseconds the probe takes,
        with its front end connected and idle, and continued after."""
        if serve is None:
            return placement_probe(self.probe_from)
        pid = serve.child_pid()
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            pass  # found gone just below
        try:
            deadline = time.monotonic() + 2.0
            while (state := proc_state(pid)) not in ("T", "t") and time.monotonic() < deadline:
                if state in (None, "Z", "X"):
                    raise RunError(f"serve (pid {pid}) exited before the placement probe")
                time.sleep(0.001)
            return placement_probe(self.probe_from)
        finally:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass  # gone meanwhile: serve.stop() reports how it ended

    def set_fwd(self, tx: TestPmd | None, rx: TestPmd | None, size: int):
        if tx:
            tx.cmd("set fwd txonly", f"set txpkts {size}")
        if rx:
            rx.cmd("set fwd rxonly")

    def window(self, fe: TestPmd, cell: Cell) -> dict:
        """Warm up, then the front end's counters across the window, read every
        STEADY_INTERVAL or so. Each show's Tx-pps (guest->host) or Rx-pps (host->guest) is
        testpmd's rate since the previous show, on its clock; the run's rate weights them
        by their lengths (window_rate), and their spread says whether the run was steady.
        Ours (counts over our wall time) is kept to check."""
        time.sleep(self.a.warmup)
        n = max(1, round(self.a.seconds / STEADY_INTERVAL))
        key = "tx" if cell.dir == "g2h" else "rx"
        shows = [fe.stats()]
        for _ in range(n):
            time.sleep(self.a.seconds / n)
            shows.append(fe.stats())
        intervals = [(b[key + "_pps"], b["t"] - a["t"]) for a, b in zip(shows, shows[1:])]
        mpps, spread = window_rate(intervals)
        packets = shows[-1][key] - shows[0][key]
        wall = shows[-1]["t"] - shows[0]["t"]
        return {"mpps": mpps, "packets": packets,
                "interval_mpps": [round(pps / 1e6, 3) for pps, _ in intervals],
                "spread": round(spread, 3) if spread is not None else None,
                "wall_seconds": round(wall, 4), "wall_mpps": packets / wall / 1e6,
                "t_start": shows[0]["t"], "t_end": shows[-1]["t"]}

    def run_dpdk(self, procs: dict, cell: Cell) -> dict:
        fe, be = procs["fe_d"], procs["be_d"]
        if cell.dir == "g2h":
            self.set_fwd(fe, be, cell.size)
        else:
            self.set_fwd(be, fe, cell.size)
        for pmd in (fe, be):
            pmd.stats()  # a barrier: the commands are carried out
        before = self.probe()
        be.cmd("start")
        fe.cmd("start")
        try:
            res = self.window(fe, cell)
        finally:
            fe.cmd("stop")
            be.cmd("stop")
        for pmd in (fe, be):
            pmd.stats()  # both forwarding lcores have stopped
        if cell.dir == "g2h":
            res.update(fe.fwd_stats())
        res["probe_ns"] = [before, self.probe()]
        del res["t_start"], res["t_end"]
        return res

    def run_serve(self, cfg_procs: dict, cell: Cell, backend: str) -> dict:
        """serve listens, a front end of its own connects (virtio-user client), one window,
        both go. (Not one front end for every serve: DPDK 22.11's virtio-user server sends
        a split ring's base as 0 when a new back end connects, while its avail index is
        far ahead; vhostlab resyncs split rings to used->idx as DPDK's vhost library
        does, and the front end resets packed rings itself, but a fresh pair keeps every
        run alike.
        See reports/vs-dpdk.md, method.)"""
        mode = (backend if backend in ("null", "touch")
                else "rxonly" if cell.dir == "g2h" else "txonly")
        n = next(self.counter)
        extra = self.a.serve_arg + (["--zero-copy"] if backend == "zc" else [])
        serve = Serve(self.a.vhostlab, self.workdir, n, self.workdir / f"v{n}.sock", mode,
                      cell.size, extra)
        fe = None
        t0 = time.monotonic()
        try:
            serve.wait_socket()
            fe = self.front_end(f"fe_v{n}", cell.config, serve.sock, server=False)
            ev = serve.wait_running()
            fe.stats()  # the front end is up and takes commands
            setup = time.monotonic() - t0
            if self.serve_exe is None:
                self.serve_exe = serve.exe()
            m = re.search(r"features (0x[0-9a-f]+)", ev["message"])
            self.negotiated.setdefault("-".join(map(str, cell.config)), {})["vhostlab"] = (
                m.group(1) if m else "?")
            if cell.dir == "g2h":
                self.set_fwd(fe, None, cell.size)
            else:
                self.set_fwd(None, fe, cell.size)
            fe.stats()  # a barrier: the commands are carried out
            before = self.probe(serve)
            fe.cmd("start")
            try:
                res = self.window(fe, cell)
                fe.cmd("stop")
                fe.stats()  # forwarding has stopped
                if cell.dir == "g2h":
                    res.update(fe.fwd_stats())
                res["probe_ns"] = [before, self.probe(serve)]
            finally:
                fe.quit()  # stop forwarding, stop the port (GET_VRING_BASE), exit
            fe.wait_gone(5.0)
            final = serve.stop()
        finally:
            if fe:
                fe.kill()
            serve.kill()
        # Only the production core is measured (builds before serve reported "core" had only
        # vhostlab-fast serve here).
        if final.get("core", "production") != "production":
            raise RunError(f"serve ran on the {final['core']} core, not the production one: "
                           f"{serve_program(self.a.vhostlab)} is not vhostlab-fast")
        q = final["totals"]
        res["setup_seconds"] = round(setup, 3)
        res["serve"] = {"rx_packets": q["rx_packets"], "tx_packets": q["tx_packets"],
                        "drops": q["drops"], "seconds": final["seconds"],
                        "idle_seconds": final.get("idle_seconds"),
                        "zero_copied": sum(qq.get("zero_copied", 0) for port in final["ports"]
                                           for qq in port["queues"])}
        # Evict-after-read (serve --evict, auto by default): lines evicted, and the tuner's
        # trials, how many turned it on and how many were split verdicts tried again, over
        # serve's whole life. And its polls of the guest's TX rings, and how many found
        # nothing: rx_packets / (rx_polls - rx_idle_polls) is the mean burst serve took,
        # under the burst size when it keeps up with the front end.
        for k in ("lines_evicted", "evict_trials", "evict_trials_on", "evict_retries",
                  "rx_polls", "rx_idle_polls"):
            res["serve"][k] = sum(qq.get(k, 0) for port in final["ports"]
                                  for qq in port["queues"])
        idle = window_idle(serve.events("stats"), res.pop("t_start") - serve.t0,
                           res.pop("t_end") - serve.t0)
        if idle is not None:
            res["serve_idle"] = round(idle, 4)
        return res

    # --- the matrix ------------------------------------------------------------------------

    def measure(self, procs: dict, cell: Cell, backend: str, rep: int) -> dict:
        """One run (probed at its window's edges, see probe), classed and recorded."""
        rec = {"rep": rep, "cell": cell.id, "backend": backend}
        try:
            rec.update(self.run_dpdk(procs, cell) if backend == "dpdk"
                       else self.run_serve(procs, cell, backend))
        except RunError as e:
            rec["error"] = str(e)
        classify_run(rec)
        self.runs.append(rec)
        return rec

    @staticmethod
    def outcome(rec: dict) -> str:
        what = (f"{rec['mpps']:.2f} Mpps" if "error" not in rec
                else "FAILED: " + rec["error"].splitlines()[0])
        return what + (f" ({rec['placement']})" if rec["placement"] else "")

    def run(self, cells: list[Cell]) -> float:
        started = time.monotonic()
        configs = sorted({c.config for c in cells}, key=lambda k: ALL_CELLS.index(
            next(c for c in ALL_CELLS if c.config == k)))
        total = self.a.reps * sum(len(c.backends()) for c in cells)
        done = 0
        for rep in range(self.a.reps):
            for cfg in configs:
                log(f"[rep {rep + 1}/{self.a.reps}] starting the front ends and DPDK's back "
                    f"end for {cfg_name(cfg)}")
                try:
                    procs = self.start_config(cfg)
                except RunError as e:
                    log(f"  FAILED to start: {e}")
                    for cell in (c for c in cells if c.config == cfg):
                        for b in cell.backends():
                            self.runs.append({"rep": rep, "cell": cell.id, "backend": b,
                                              "error": f"start: {e}"})
                            done += 1
                    continue
                try:
                    for i, cell in enumerate(c for c in cells if c.config == cfg):
                        order = cell.backends()
                        if (rep + i) % 2:
                            order = tuple(reversed(order))
                        for b in order:
                            rec = self.measure(procs, cell, b, rep)
                            done += 1
                            el = time.monotonic() - started
                            log(f"[rep {rep + 1}/{self.a.reps}] {cell.id:28} {b:9} "
                                f"{self.outcome(rec)}   ({done}/{total}, {el:.0f} s, about "
                                f"{el / done * (total - done):.0f} s left)")
                finally:
                    self.stop_config(procs)
        return time.monotonic() - started

    def fill(self, cells: list[Cell], k: int, budget: float) -> dict:
        """After the repetitions: more runs where a placement's figures rest on fewer than k
        pairs of DPDK and vhostlab runs or of DPDK and touch runs (fill_needs), until none
        does or `budget` seconds are spent. Once a round's run did not land steady in the
        placement aimed at, the round's other runs are skipped: they could not make a pair
        with it, and the CPUs have most likely moved. The host picks the
        placement, not us: each round probes it and runs a cell short there (fill_pick: the
        furthest from its pairs, then the ring configuration whose processes are up); when
        the current placement is full it waits for the other. Each run's own probes still
        class it: a round may land elsewhere."""
        started = time.monotonic()
        procs, cfg_now, rnd, runs_before, waited = None, None, 0, len(self.runs), 0.0
        # A round's runs share a `rep` no earlier run has (the pairs are found by it): after
        # the repetitions, or after every run of the report an --extend carries on.
        rep_base = max([self.a.reps] + [r["rep"] + 1 for r in self.runs])
        cfg_since = 0.0  # when procs were started
        failures = 0  # in a row: a back end that keeps failing would spend the budget
        waiting = False
        try:
            while failures < 3:
                left = budget - (time.monotonic() - started)
                if not any(fill_needs(cells, self.runs, w, k) for w in ("close", "far")):
                    log(f"[fill] every cell has {k} pairs (vhostlab and touch) per placement")
                    break
                if left <= 0:
                    log(f"[fill] budget of {budget / 60:.1f} min spent; still short: "
                        + fill_short_words(cells, self.runs, k))
                    break
                probe = self.probe()
                where = placement(probe, probe)
                need = fill_needs(cells, self.runs, where, k) if where else {}
                if not need:
                    if not waiting:
                        log(f"[fill] {where or 'no placement probed'}: nothing short here; "
                            "waiting for the host to move the CPUs")
                    waiting = True
                    time.sleep(1.0)
                    waited += 1.0
                    continue
                waiting = False
                by_id = {c.id: c for c in cells}
                pick = fill_pick(need, by_id, cfg_now)
                cell = by_id[pick]
                aged = procs and time.monotonic() - cfg_since > CONFIG_MAX_AGE
                if cell.config != cfg_now or aged:
                    if procs:
                        self.stop_config(procs)
                        procs, cfg_now = None, None
                    log(f"[fill] starting the front ends and DPDK's back end for "
                        f"{cfg_name(cell.config)}" + (" again (they are old)" if aged else ""))
                    try:
                        procs = self.start_config(cell.config)
                    except RunError as e:
                        log(f"  FAILED to start: {e}")
                        break
                    cfg_now, cfg_since = cell.config, time.monotonic()
                # The round's runs back to back, each pairing with its DPDK run (vhostlab
                # and touch: DPDK, vhostlab, touch; the order turns every round).
                order = [b for b in cell.backends() if b in need[pick]]
                if rnd % 2:
                    order.reverse()
                missed = None  # the round's first run that did not land in `where`
                for b in order:
                    if missed:
                        log(f"[fill {where} {rnd + 1}] {cell.id:28} {b:9} skipped: the "
                            f"round's {missed['backend']} run was not steady {where} "
                            f"({missed.get('placement') or 'failed'})")
                        continue
                    rec = self.measure(procs, cell, b, rep_base + rnd)
                    rec["fill"] = where  # the placement it was run for
                    if "error" in rec or rec["placement"] != where:
                        missed = rec
                    failures = failures + 1 if "error" in rec else 0
                    if b == "dpdk" and "error" in rec:
                        # DPDK's pair is this configuration's: start it again next round
                        # (a vhostlab run between would reset `failures`, and the dead
                        # pair would fail every DPDK run after).
                        self.stop_config(procs)
                        procs, cfg_now = None, None
                    el = time.monotonic() - started
                    log(f"[fill {where} {rnd + 1}] {cell.id:28} {b:9} {self.outcome(rec)}   "
                        f"({el:.0f} s of {budget:.0f} s)")
                rnd += 1
            if failures >= 3:
                log("[fill] stopped: three runs in a row failed")
        finally:
            if procs:
                self.stop_config(procs)
        return {"steady_runs_wanted": k, "pairs": True, "touch_pairs": True,
                "budget_seconds": budget,
                "rounds": rnd,
                "runs": len(self.runs) - runs_before, "waited_seconds": waited,
                "seconds": round(time.monotonic() - started, 1),
                "short_after": {w: fill_needs(cells, self.runs, w, k)
                                for w in ("close", "far")}}

    def cleanup(self):
        root = Path("/var/run/dpdk")
        for p in self.prefixes:
            shutil.rmtree(root / p, ignore_errors=True)
        if self.a.keep:
            log(f"logs kept in {self.workdir}")
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)


def memcpy_ceiling(vhostlab: Path, seconds: float) -> dict | None:
    exe = vhostlab.parent / "vl_memcpy_ceiling"
    if not os.access(exe, os.X_OK):
        log(f"note: {exe} not found: no memcpy ceiling (build the vl_memcpy_ceiling target)")
        return None
    out = subprocess.run(["taskset", "-c", str(BE_CPU), str(exe), "--json", "--seconds",
                          str(seconds)], capture_output=True, text=True, check=True,
                         timeout=120).stdout
    return json.loads(out)


def placement_probe(vhostlab: Path) -> float | None:
    """The round trip between the back-end and front-end CPUs, in ns (None without the
    tool). Run only while neither CPU has a poller of ours on it."""
    exe = vhostlab.parent / "vl_cpu_pingpong"
    if not os.access(exe, os.X_OK):
        return None
    out = subprocess.run([str(exe), "--cpus", f"{BE_CPU},{FE_CPU}", "--rounds", "20000",
                          "--json"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        log(f"note: {exe} failed: {out.stderr.strip()}")
        return None
    return json.loads(out.stdout)["round_trip_ns"]


def window_rate(intervals: list[tuple[float, float]]) -> tuple[float, float | None]:
    """(Mpps over the window, highest / lowest interval rate) from the window's intervals,
    each (testpmd's pps over it, its length in seconds by our clock): the intervals' rates
    weighted by their length. The spread is None when an interval moved nothing."""
    total = sum(t for _, t in intervals)
    mpps = sum(pps * t for pps, t in intervals) / total / 1e6 if total > 0 else 0.0
    rates = [pps for pps, _ in intervals]
    spread = max(rates) / min(rates) if rates and min(rates) > 0 else None
    return mpps, spread


def classify(before: float | None, after: float | None, spread: float | None) -> str | None:
    """The run's class: its placement by the probes (close, far, mixed, or None without
    probes), or unsteady when its interval rates spread more than STEADY_MAX."""
    where = placement(before, after)
    if where in ("close", "far") and (spread is None or spread > STEADY_MAX):
        return "unsteady"
    return where


def classify_run(rec: dict):
    """A finished run's checks and class: no traffic in the window is an error; the class
    from the probes the run took around its window (probe_ns; none when it failed before
    them) and its steadiness."""
    if "error" not in rec and rec["mpps"] <= 0:
        rec["error"] = "no packets in the window"
    before, after = rec.setdefault("probe_ns", [None, None])
    rec["placement"] = (placement(before, after) if "error" in rec
                        else classify(before, after, rec["spread"]))


def proc_state(pid: int) -> str | None:
    """The state letter of /proc/PID/stat (T: stopped), None when the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()[0]


def placement(before: float | None, after: float | None) -> str | None:
    """close, far or mixed (see PLACEMENT_FAR_NS); None without probes."""
    if before is None or after is None:
        return None
    if before < PLACEMENT_FAR_NS and after < PLACEMENT_FAR_NS:
        return "close"
    if before >= PLACEMENT_FAR_NS and after >= PLACEMENT_FAR_NS:
        return "far"
    return "mixed"


# The back ends a verdict compares, in pairs run back to back (rep_pairs); touch and null are
# ceilings beside them.
PAIR = ("dpdk", "vhostlab")


def rep_pairs(cell_id: str, runs: list[dict], keep=lambda r: True,
              backend: str = "vhostlab", base: str = "dpdk") -> list[float]:
    """`backend` / `base` (vhostlab or the touch ceiling over DPDK; vhostlab over touch) for
    each repetition or fill round (`rep`) with a run of each of the cell, neither failed,
    both kept by `keep`."""
    by_rep: dict[int, dict[str, float]] = {}
    for r in runs:
        if (r["cell"] == cell_id and "error" not in r and r["backend"] in (base, backend)
                and keep(r)):
            by_rep.setdefault(r["rep"], {})[r["backend"]] = r["mpps"]
    return [x[backend] / x[base] for x in by_rep.values()
            if base in x and backend in x and x[base] > 0]


def placement_pairs(cell_id: str, runs: list[dict], where: str,
                    suspect: set[int] | None = None, backend: str = "vhostlab",
                    base: str = "dpdk") -> list[float]:
    """`backend` / DPDK for each repetition or fill round whose two runs of the cell were
    both steady in placement `where`: the two ran seconds apart, so a slow or fast spell of
    the machine usually falls on both, where two medians over runs minutes apart need not.
    A pair with a suspect run (suspect_runs; `suspect` holds their id()s, found here when
    None) is left out: that run most likely spent its window in the other placement, and
    one such pair would decide a placement with few pairs, where one run barely moves a
    median. vhostlab's pairs decide the verdict; touch's decide whether a cell short of the
    goal is capped (placement_verdict); vhostlab's over touch's (base "touch") say how near
    the ceiling vhostlab ran in the same round."""
    if suspect is None:
        suspect = {id(r) for r in suspect_runs(runs)[0]}
    return rep_pairs(cell_id, runs,
                     lambda r: r.get("placement") == where and id(r) not in suspect, backend,
                     base)


def judged_ratio(p: dict) -> float | None:
    """The ratio a placement is judged on: the median of its pairs (placement_pairs) when it
    has one, else the ratio of its two medians (None without runs of both)."""
    return p["paired"] if p.get("n_pairs") else p.get("ratio")


def touch_judged(p: dict) -> float | None:
    """The touch ceiling a placement's verdict compares with, as judged_ratio: the median of
    its touch / DPDK pairs when it has one, else touch's median over DPDK's."""
    return p["touch_paired"] if p.get("n_touch_pairs") else p.get("touch_ratio")


def fe_dropped_share(r: dict) -> float | None:
    """The share of the packets a guest->host run's front end made that it dropped, the
    ring being full (None: not recorded, or nothing made)."""
    made = r.get("fe_sent", 0) + r.get("fe_dropped", 0)
    return r["fe_dropped"] / made if "fe_dropped" in r and made else None


def by_placement(cell_id: str, runs: list[dict]) -> dict:
    """Per placement (close, far): each back end's median over the runs of that placement,
    the ratio of those medians, and how many runs went in; the median of the pairs of runs
    taken back to back there (paired, n_pairs) and the ratio judged (judged_ratio); for cells
    with touch runs, also touch's median and touch / DPDK, the most any back end that reads
    its packets could reach there; for cells with zero-copy runs, zc's median and zc / DPDK.
    Only runs of one placement compare: a far run is slower whichever back end it
    measured."""
    out = {}
    suspect = {id(r) for r in suspect_runs(runs)[0]}
    for where in ("close", "far"):
        vals = {b: [r["mpps"] for r in runs if r["cell"] == cell_id and "error" not in r
                    and r["backend"] == b and r.get("placement") == where]
                for b in ("dpdk", "vhostlab", "touch", "zc")}
        d, v = vals["dpdk"], vals["vhostlab"]
        out[where] = {
            "dpdk": statistics.median(d) if d else None,
            "vhostlab": statistics.median(v) if v else None,
            "ratio": statistics.median(v) / statistics.median(d) if d and v else None,
            "n_dpdk": len(d), "n_vhostlab": len(v)}
        pairs = placement_pairs(cell_id, runs, where, suspect)
        out[where].update({"paired": statistics.median(pairs) if pairs else None,
                           "n_pairs": len(pairs)})
        out[where]["judged"] = judged_ratio(out[where])
        # touch and zc (shown beside the verdict, never in it): a median, a count and the
        # ratio to DPDK's median, each under its own name; touch also paired with DPDK's
        # runs, as the verdict is (the ceiling a short cell is measured against).
        for b in ("touch", "zc"):
            vs = vals[b]
            if vs:
                out[where].update({
                    b: statistics.median(vs), f"n_{b}": len(vs),
                    f"{b}_ratio": statistics.median(vs) / statistics.median(d) if d else None})
        if vals["touch"]:
            tp = placement_pairs(cell_id, runs, where, suspect, "touch")
            out[where].update({"touch_paired": statistics.median(tp) if tp else None,
                               "n_touch_pairs": len(tp)})
            # vhostlab against the ceiling taken in the same round: the room a back end
            # that reads its packets has left there, whichever spell the round fell in.
            vt = placement_pairs(cell_id, runs, where, suspect, "vhostlab", "touch")
            out[where].update({"vs_touch_paired": statistics.median(vt) if vt else None,
                               "n_vs_touch_pairs": len(vt)})
        mine = [r for r in runs if r["cell"] == cell_id and "error" not in r
                and r["backend"] == "vhostlab" and r.get("placement") == where]
        idle = [r["serve_idle"] for r in mine if r.get("serve_idle") is not None]
        if idle:
            out[where]["serve_idle"] = statistics.median(idle)
        # Lines evicted per packet received (guest->host: one per packet while eviction is
        # on), the share of the run's packets serve evicted after.
        evicted = [r["serve"]["lines_evicted"] / r["serve"]["rx_packets"] for r in mine
                   if "lines_evicted" in r.get("serve", {}) and r["serve"]["rx_packets"]]
        if evicted:
            out[where]["evicted"] = statistics.median(evicted)
        # The front end's drops for want of ring room, per back end: how often the back end
        # fell behind far enough to leave testpmd's txonly no descriptors for a burst it
        # had already made (guest->host).
        for b in ("dpdk", "vhostlab"):
            shares = [x for r in runs if r["cell"] == cell_id and "error" not in r
                      and r["backend"] == b and r.get("placement") == where
                      and (x := fe_dropped_share(r)) is not None]
            if shares:
                out[where][f"{b}_fe_dropped"] = statistics.median(shares)
    return out


def cfg_name(cfg: tuple) -> str:
    return f"{cfg[0]}-mrg{cfg[1]}-ord{cfg[2]}"


def fill_needs(cells: list[Cell], runs: list[dict], where: str, k: int) -> dict:
    """For placement `where`: {cell id: {back end: runs missing}} for every cell short there:
    with fewer than k pairs of DPDK and vhostlab runs (placement_pairs: one of each in a
    repetition or fill round, both steady in `where`), both are missing that many; with
    fewer than k pairs of DPDK and touch runs, touch and DPDK are (DPDK the larger
    shortfall: one DPDK run pairs with both)."""
    out = {}
    suspect = {id(r) for r in suspect_runs(runs)[0]}
    for cell in cells:
        miss = {}
        pairs = len(placement_pairs(cell.id, runs, where, suspect))
        if pairs < k:
            miss = {b: k - pairs for b in PAIR}
        if "touch" in cell.backends():
            have = len(placement_pairs(cell.id, runs, where, suspect, "touch"))
            if have < k:
                miss["touch"] = k - have
                miss["dpdk"] = max(miss.get("dpdk", 0), k - have)
        if miss:
            out[cell.id] = miss
    return out


def fill_pick(need: dict, by_id: dict, cfg_now) -> str:
    """The cell a fill round runs, of those `need` (fill_needs) names: the one furthest
    from its pairs, then one of the ring configuration whose processes are up (`cfg_now`),
    then the one needing the most runs, then the matrix's order. Furthest first, so a
    budget that runs out leaves the cells about equally short instead of whole ring
    configurations untouched (the first rule was once the configuration: on a day when
    most runs landed mixed, the first 56 minutes of a 95-minute fill went to the
    16 split cells alone, none to the packed ones). Starting another
    configuration's DPDK pair costs about a second, under one run's window."""
    return min(need, key=lambda cid: (-max(need[cid].values()),
                                      by_id[cid].config != cfg_now,
                                      -sum(need[cid].values()),
                                      ALL_CELLS.index(by_id[cid])))


def fill_short_words(cells: list[Cell], runs: list[dict], k: int) -> str:
    parts = []
    for w in ("close", "far"):
        need = fill_needs(cells, runs, w, k)
        if need:
            parts.append(f"{len(need)} cell{'s' if len(need) > 1 else ''} {w} "
                         f"({sum(sum(m.values()) for m in need.values())} runs)")
    return ", ".join(parts) or "nothing"


def report_fills(meta: dict) -> list[dict]:
    """A report's fills in order: the run's --fill, then each --extend's."""
    return [f for f in [meta.get("fill")] + [e["fill"] for e in meta.get("extended", [])]
            if f]


# What the report says of each fill (a run's --fill, an --extend's), and of each extension.
FILL_KEYS = ("steady_runs_wanted", "short_after", "runs", "rounds", "seconds",
             "budget_seconds", "waited_seconds")
EXTENSION_KEYS = ("command", "date", "cells", "fill")


def check_fills(meta: dict) -> None:
    """Raise (KeyError or TypeError, naming the entry and what it lacks) when a report's
    fill or extension records are not what the report and --extend read."""
    ext = meta.get("extended", [])
    if not isinstance(ext, list):
        raise TypeError("meta.extended is not a list")
    for i, e in enumerate(ext):
        if not isinstance(e, dict):
            raise TypeError(f"meta.extended[{i}] is not an object")
        missing = [k for k in EXTENSION_KEYS if k not in e]
        if missing:
            raise KeyError(f"meta.extended[{i}] has no {', '.join(missing)}")
    named = [("meta.fill", meta.get("fill"))] + [
        (f"meta.extended[{i}].fill", e["fill"]) for i, e in enumerate(ext)]
    for where, f in named:
        if not f:
            continue
        if not isinstance(f, dict):
            raise TypeError(f"{where} is not an object")
        missing = [k for k in FILL_KEYS if k not in f]
        if missing:
            raise KeyError(f"{where} has no {', '.join(missing)}")


def fill_ks(meta: dict) -> list[int]:
    """The K each fill of a report aimed at, in order, a K once where fills in a row aimed
    at it: [] when it was never filled; the last is the last fill's."""
    ks = []
    for f in report_fills(meta):
        if not ks or ks[-1] != f["steady_runs_wanted"]:
            ks.append(f["steady_runs_wanted"])
    return ks


def fill_k_words(meta: dict) -> str:
    """fill_ks in words: "3", or "3, then 5 (`--extend`)" when an extension aimed at
    another K (higher or lower)."""
    ks = fill_ks(meta)
    return str(ks[0]) + "".join(f", then {k}" for k in ks[1:]) + (
        " (`--extend`)" if len(ks) > 1 else "")


# suspect_runs: a cell's back end whose close and far medians differ at least this much
# (highest / lowest) separates its runs by rate as well as by probe.
SUSPECT_GAP = 1.5


def suspect_runs(runs: list[dict]) -> tuple[list[dict], int]:
    """A check on the probes' classes: (the runs whose rate is nearer, on a log scale, the
    median of the other placement's runs of the same cell and back end, how many runs were
    looked at). Only cells and back ends with runs in both placements whose medians differ
    by SUSPECT_GAP or more are looked at. A suspect run most likely spent its window in the
    placement its probes did not see; the medians it joins are then off by that run."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        if "error" not in r and r.get("placement") in ("close", "far"):
            groups.setdefault((r["cell"], r["backend"]), []).append(r)
    out, looked = [], 0
    for rs in groups.values():
        med = {w: [r["mpps"] for r in rs if r["placement"] == w] for w in ("close", "far")}
        if not med["close"] or not med["far"]:
            continue
        m = {w: statistics.median(v) for w, v in med.items()}
        if max(m.values()) < SUSPECT_GAP * min(m.values()):
            continue
        looked += len(rs)
        for r in rs:
            other = "far" if r["placement"] == "close" else "close"
            x = math.log(r["mpps"])
            if abs(x - math.log(m[other])) < abs(x - math.log(m[r["placement"]])):
                out.append(r)
    return out, looked


def placement_verdict(p: dict) -> str | None:
    """The goal judged within each placement: "met" when the judged ratio (judged_ratio) is
    >= TARGET in every placement that has runs of both back ends; "capped" when it is short
    only in placements where the touch ceiling itself is under TARGET x DPDK (out of reach
    for any back end that reads its packets); "short" otherwise; None without a placement
    that has both."""
    have = [w for w in ("close", "far") if judged_ratio(p[w]) is not None]
    if not have:
        return None
    short = [w for w in have if judged_ratio(p[w]) < TARGET]
    if not short:
        return "met"
    if all((touch_judged(p[w]) or TARGET) < TARGET for w in short):
        return "capped"
    return "short"


def paired_ratio(cell_id: str, runs: list[dict]) -> float | None:
    """Median over the repetitions of vhostlab / DPDK within one repetition. The two runs of
    a repetition are seconds apart, so a slow or fast spell of the machine (this VM's rate
    moves by 2x for minutes at a time) usually falls on both; the ratio of the medians can
    pair one back end's fast runs with the other's slow ones."""
    pairs = rep_pairs(cell_id, runs)
    return statistics.median(pairs) if pairs else None


def summarize(cells: list[Cell], runs: list[dict]) -> list[dict]:
    """Each cell's row. The medians over all placements and the paired ratio take the
    repetitions only: their schedule does not depend on placement. The --fill runs were
    aimed at one placement, so they only join the per-placement figures."""
    reps = [r for r in runs if not r.get("fill")]
    rows = []
    for cell in cells:
        row = {"cell": cell.id, "ring": cell.ring, "mrg": cell.mrg, "ord": cell.ord,
               "size": cell.size, "dir": cell.dir}
        for b in cell.backends():
            vals = [r["mpps"] for r in reps
                    if r["cell"] == cell.id and r["backend"] == b and "error" not in r]
            row[b] = median_min_max(vals) if vals else None
        d, v = row.get("dpdk"), row.get("vhostlab")
        row["ratio"] = v["median"] / d["median"] if d and v and d["median"] > 0 else None
        row["paired_ratio"] = paired_ratio(cell.id, reps)
        row["placement"] = by_placement(cell.id, runs)
        row["verdict"] = placement_verdict(row["placement"])
        rows.append(row)
    return rows


def machine() -> dict:
    model = "?"
    try:
        m = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
        model = m.group(1).strip() if m else "?"
    except OSError:
        pass
    dpdk = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "dpdk-dev"],
                          capture_output=True, text=True).stdout.strip() or "?"
    return {"cpu": model, "cpus": os.cpu_count(), "kernel": os.uname().release,
            "dpdk": dpdk}


# --- the report --------------------------------------------------------------------------

def fmt_mmm(x: dict | None) -> str:
    if not x:
        return "—"
    return f"{x['median']:.2f} ({x['min']:.2f}–{x['max']:.2f})"


def write_markdown(path: Path, doc: dict):
    rows = doc["cells"]
    meta = doc["meta"]
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    lines = [
        "# vhostlab serve vs DPDK's vhost back end",
        "",
        f"Generated by `{meta['command']}` on {meta['date']} (took "
        f"{meta['duration_seconds'] / 60:.1f} min); {len(rows)} of {len(ALL_CELLS)} cells, "
        f"{meta['reps']} repetitions, {meta['seconds']} s window after {meta['warmup']} s "
        f"warm-up. Machine: {meta['machine']['cpu']}, {meta['machine']['cpus']} CPUs, Linux "
        f"{meta['machine']['kernel']}, DPDK {meta['machine']['dpdk']}; load average "
        f"{meta['load_start']:.2f} at the start, {meta['load_end']:.2f} at the end.",
        "",
    ]
    fill = meta.get("fill")
    if fill:
        short = sum(len(v) for v in fill["short_after"].values())
        lines += [
            f"Then filled (`--fill {fill['steady_runs_wanted']}`): wherever a cell's figures "
            f"in one placement rested on fewer than {fill['steady_runs_wanted']} "
            + ("pairs of DPDK and vhostlab runs taken back to back, both steady there, or "
               + ("as many such pairs of DPDK and touch runs" if fill.get("touch_pairs")
                  else f"fewer than {fill['steady_runs_wanted']} steady touch runs")
               if fill.get("pairs") else "steady runs of DPDK, vhostlab or touch")
            + f", more runs of that cell, in the placement the host gave at the time: "
            f"{fill['runs']} runs in {fill['rounds']} rounds, "
            f"{fill['seconds'] / 60:.1f} min of a {fill['budget_seconds'] / 60:g} min "
            f"budget ({fill['waited_seconds']:.0f} s waiting for the other placement). "
            + (f"Still short after it: {short} cell-placements (see By placement for the run "
               "counts)." if short else "Every cell reached it in both placements."),
            ""]
    for ext in meta.get("extended", []):
        f = ext["fill"]
        short = sum(len(v) for v in f["short_after"].values())
        lines += [
            f"Extended by `{ext['command']}` on {ext['date']}: more fill rounds, to "
            f"{f['steady_runs_wanted']} pairs per placement, for "
            + (f"{len(ext['cells'])} of the cells" if len(ext["cells"]) < len(rows)
               else "every cell")
            + f", with the same window, serve arguments and serve build: {f['runs']} runs in "
            f"{f['rounds']} rounds, {f['seconds'] / 60:.1f} min of a "
            f"{f['budget_seconds'] / 60:g} min budget ({f['waited_seconds']:.0f} s waiting for "
            "the other placement). "
            + (f"Still short after it: {short} cell-placements." if short
               else "Every cell reached it in both placements."),
            ""]
    if len(rows) < len(ALL_CELLS) or meta["reps"] < 3:
        lines += ["**A partial run** (a subset of cells or fewer than 3 repetitions): not the "
                  "full comparison.", ""]
    if ratios:
        hit = sum(1 for x in ratios if x >= TARGET)
        par = sum(1 for x in ratios if x >= 1.0)
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        worst = sorted((r for r in rows if r["ratio"]), key=lambda r: r["ratio"])[:3]
        lines += [
            "## Summary",
            "",
            f"- Goal: vhostlab ≥ {TARGET:.2f}× DPDK in every cell. Met in **{hit} of "
            f"{len(ratios)}** cells; vhostlab at least as fast as DPDK in {par}.",
            f"- Geometric mean of the ratios: **{geo:.2f}×**; range "
            f"{min(ratios):.2f}× – {max(ratios):.2f}×.",
            "- Worst cells: " + ", ".join(f"`{r['cell']}` {r['ratio']:.2f}×" for r in worst)
            + ".",
        ]
        paired = [r["paired_ratio"] for r in rows if r.get("paired_ratio")]
        if paired:
            lines.append(
                f"- Paired ratios (the median of vhostlab / DPDK within each repetition, less "
                f"exposed to the machine's slow and fast spells): ≥ {TARGET:.2f}× in "
                f"{sum(1 for x in paired if x >= TARGET)} of {len(paired)} cells, ≥ 1.00× in "
                f"{sum(1 for x in paired if x >= 1.0)}.")
        for where, words in (("close", "close together"), ("far", "far apart")):
            pr = [judged_ratio(r["placement"][where]) for r in rows
                  if r.get("placement") and judged_ratio(r["placement"][where])]
            if pr:
                lines.append(
                    f"- With the two CPUs {words} (see By placement; the ratio judged: the "
                    f"median of the pairs of runs taken back to back there, else the ratio of "
                    f"the medians): ≥ {TARGET:.2f}× in "
                    f"{sum(1 for x in pr if x >= TARGET)} of the {len(pr)} cells that have "
                    f"runs of both back ends there, ≥ 1.00× in "
                    f"{sum(1 for x in pr if x >= 1.0)}; geometric mean "
                    f"{math.exp(sum(math.log(x) for x in pr) / len(pr)):.2f}×."
                    + capped_words(rows, where))
        judged = [r for r in rows if r.get("verdict")]
        if judged:
            met = sum(1 for r in judged if r["verdict"] == "met")
            capped = sum(1 for r in judged if r["verdict"] == "capped")
            short = [r for r in judged if r["verdict"] == "short"]
            lines.append(
                f"- **Judged within each placement** (a cell meets the goal when its judged "
                f"ratio is ≥ {TARGET:.2f}× in each placement that has runs of both back ends): "
                f"met in "
                f"**{met} of {len(judged)}** cells; {capped} more short only where even the "
                f"touch ceiling is under {TARGET:.2f}× DPDK (out of reach for a back end that "
                f"reads its packets); {len(short)} short with room left"
                + (": " + ", ".join(
                    f"`{r['cell']}` " + " / ".join(
                        f"{w} {judged_ratio(r['placement'][w]):.2f}×"
                        + short_words(r["placement"][w])
                        for w in ("close", "far")
                        if judged_ratio(r["placement"][w]) is not None
                        and judged_ratio(r["placement"][w]) < TARGET) for r in short)
                   if short else "") + ".")
        zc = zero_copy_counts(rows)
        if zc["placements"]:
            lines.append(
                f"- Not judged: with zero-copy dequeue (`--zero-copy`, which DPDK 22.11's "
                f"vhost back end does not have), vhostlab is ≥ {TARGET:.2f}× DPDK in "
                f"{zc['met']} of the {zc['placements']} cell-placements where both ran "
                f"({zc['cells']} guest→host cells of {ZC_MIN_LEN} bytes or more); "
                f"{zc['range']} (see Zero-copy dequeue).")
        lines.append("")
    failed = [r for r in doc["runs"] if "error" in r]
    if failed:
        lines += [f"**{len(failed)} runs failed** (no rate; see the JSON for what was seen): "
                  + ", ".join(sorted({f"{r['cell']}/{r['backend']}" for r in failed})), ""]
    lines += [
        "## Results",
        "",
        "Mpps: median over the repetitions (min–max). Ratio: vhostlab median / DPDK median "
        "(the goal's column). Paired: the median over the repetitions of vhostlab / DPDK "
        "within one repetition. Null: `vhostlab serve --mode null`, the front end's ceiling "
        "(guest→host only). Touch: `vhostlab serve --mode touch`, the ceiling of a back end "
        "that reads its packets (guest→host only; see Ceilings).",
        "",
        "| cell | ring | mrg | in-order | size | direction | DPDK Mpps | vhostlab Mpps | ratio "
        f"| ≥ {TARGET:.2f} | paired | null ceiling Mpps | touch ceiling Mpps |",
        "|---|---|---|---|---:|---|---:|---:|---:|:-:|---:|---:|---:|",
    ]
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if r["ratio"] else "—"
        ok = "—" if not r["ratio"] else ("yes" if r["ratio"] >= TARGET else "**no**")
        null = fmt_mmm(r.get("null")) if r["dir"] == "g2h" else "n/a"
        touch = fmt_mmm(r.get("touch")) if r["dir"] == "g2h" else "n/a"
        paired = f"{r['paired_ratio']:.2f}" if r.get("paired_ratio") else "—"
        lines.append(
            f"| `{r['cell']}` | {r['ring']} | {'on' if r['mrg'] else 'off'} | "
            f"{'on' if r['ord'] else 'off'} | {r['size']} | {DIR_WORDS[r['dir']]} | "
            f"{fmt_mmm(r.get('dpdk'))} | {fmt_mmm(r.get('vhostlab'))} | {ratio} | {ok} | "
            f"{paired} | {null} | {touch} |")
    lines += ["", "![vs-dpdk](vs-dpdk.png)", ""]
    lines += placement_section(doc)
    lines += zero_copy_section(doc)
    lines += ["## Ceilings", "",
              "**Null back end** (`vhostlab serve --mode null`, `vl_net_discard`): every chain "
              "the front end transmits goes back at once with used length 0; descriptors are "
              "walked and checked, buffers never read, nothing allocated or copied. Its rate "
              "is what the front end (testpmd txonly on virtio-user, one core) can do at all: "
              "a back end at the null rate is no longer the bottleneck. The front end's "
              "receive ring is left alone, so host→guest has no null figure: DPDK's virtio "
              "driver takes a used length only if it covers the virtio-net header and an "
              "Ethernet header (shorter ones are dropped as errors), and with mergeable "
              "buffers it reads num_buffers from that header — a back end must write it, "
              "which is no longer nothing.", "",
              "**Touch back end** (`vhostlab serve --mode touch`, `vl_net_discard_touch`): "
              "the null back end plus one byte of each packet read, the first after the "
              "virtio-net header. The front end wrote that cache line just before; reading "
              "it moves the line to the back end's CPU, and the front end pays to take it "
              "back when it writes the buffer again. Every back end that reads its packets "
              "pays that (DPDK's copies them), so none can beat the touch rate: in a cell "
              "where touch itself is under the goal, the goal is out of reach for a real "
              "back end. The gap between null and touch is that one line's cost. Run in every "
              "guest→host cell: of a 64-byte packet the line is the whole packet; of a "
              "1518-byte one it is 1 line in 24, a looser bound, but a bound: a back end "
              "that copies the packet reads that line too.", ""]
    mc = doc.get("memcpy")
    if mc:
        lines += ["**memcpy** (`vl_memcpy_ceiling`, glibc memcpy on the back-end CPU, length "
                  "not known to the compiler; warm: 32 buffers each side, in L1/L2; cold: "
                  "256 MiB each side walked at a 2176-byte stride). Mcopies/s is the packet "
                  "rate of a back end that did nothing but that one copy per packet.", "",
                  "| size | buffers | ns/copy | Mcopies/s | GB/s |",
                  "|---:|---|---:|---:|---:|"]
        for c in mc["cases"]:
            lines.append(f"| {c['size']} | {c['buffers']} | {c['ns_per_copy']:.2f} | "
                         f"{c['mcopies_per_s']:.2f} | {c['gbytes_per_s']:.2f} |")
        lines.append("")
    lines += [
        "## How it was measured",
        "",
        f"- **Front end**: DPDK {meta['machine']['dpdk']} `dpdk-testpmd` with a virtio-user "
        "port (`--no-huge -m 256 --total-num-mbufs=16384`, `--vdev net_virtio_user0,"
        "path=SOCK,queues=1,packed_vq=…,mrg_rxbuf=…,in_order=…`), interactive, "
        f"main and forwarding lcore on CPU {FE_CPU} (`taskset`, `--lcores "
        f"0@{FE_CPU},1@{FE_CPU}`). guest→host: the front end runs `txonly` with `set txpkts "
        "SIZE`, the back end counts and drops; host→guest: the back end generates SIZE-byte "
        "frames, the front end runs `rxonly`.",
        f"- **Back ends**, on CPU {BE_CPU}: (a) DPDK: `dpdk-testpmd` with `--vdev net_vhost0,"
        "iface=SOCK,queues=1,client=1` (`rxonly` / `txonly` + `set txpkts SIZE`; DPDK "
        "22.11's net_vhost has no dequeue-zero-copy option any more, every option at its "
        "default); (b) `vhostlab serve --mode rxonly|txonly --size SIZE "
        + " ".join(meta["serve_args"]) + "`, which ran as `" + str(meta.get("serve_exe"))
        + "` (the production core, no lab hooks); (c) null and (d) touch: the same with "
        "`--mode null` and `--mode touch`"
        + (f"; (e) zero-copy, in guest→host cells of {ZC_MIN_LEN} bytes or more: (b) with "
           "`--zero-copy` (see Zero-copy dequeue). "
           if any(r["backend"] == "zc" for r in doc["runs"]) else ". ")
        + "Both poll: testpmd's forwarding lcore spins, and serve "
        + ("runs with `--poll`." if "--poll" in meta["serve_args"] else
           "sleeps only when a round moved nothing (no `--poll`)."),
        "- **What is counted**: the front end's port counters (`show port stats 0`), the "
        "same program and the same counter whichever back end runs. Shows every "
        f"{STEADY_INTERVAL} s or so cut the window into intervals; each show's `Tx-pps` "
        "(guest→host) or `Rx-pps` (host→guest) is testpmd's own rate since the previous "
        "one, on its clock, and the run's rate is their mean weighted by the intervals' "
        "lengths (`interval_mpps` in the JSON; a run whose intervals differ by more than "
        f"{STEADY_MAX:.2f}x is unsteady, see By placement). In "
        "guest→host the front end is the sender: it counts a packet when virtio-user put "
        "it on the ring, and a back end that lags only makes the ring full, so sent and "
        "received differ by at most the ring (256 packets, < 0.01 % of a window)"
        + ("; txonly drops the packets it made and found no room for, and each run's JSON "
           "keeps them from testpmd's forward statistics over the forwarding run, warm-up "
           "included (`fe_dropped`, beside `fe_sent`)"
           if any("fe_dropped" in r for r in doc["runs"]) else "")
        + ". The "
        "count over our own wall clock is kept beside it in the JSON (`wall_mpps`), and "
        "serve's own totals for its runs. serve prints its live statistics every "
        f"{SERVE_STATS_INTERVAL:g} s (`--stats-interval`); the mean `idle_share` of the "
        "intervals inside the window is the run's `serve_idle`.",
        "- **Connections**: the DPDK pair (front end as virtio-user server, net_vhost as "
        "client) starts once per repetition and ring configuration and serves that "
        "configuration's four size × direction cells, idle (forwarding stopped, main "
        "lcores blocked on stdin) while serve runs. serve and a front end of its own "
        "(virtio-user client, otherwise the same options) start for each run, which costs "
        "under a second: a virtio-user server kept across back ends hands each new back "
        "end its split rings with base 0 while its indices are far ahead (vhostlab resyncs "
        "to the guest's used index, as DPDK's vhost library does) and resets its packed "
        "rings, dropping what was in flight; a fresh pair keeps every run alike. Which side "
        "listens changes nothing on the datapath.",
        "- **Interleaving**: for each repetition, for each ring configuration, for each "
        "cell, the back ends one after the other, the order reversed every other cell and "
        "repetition, so slow drifts of the machine fall on both sides.",
        "- **Negotiated features** (hex, per ring configuration): "
        + "; ".join(f"{k}: DPDK {v.get('dpdk', '?')}, vhostlab {v.get('vhostlab', '?')}"
                    for k, v in sorted(meta["negotiated"].items())) + ".",
        "",
        "Raw runs: `vs-dpdk.json` beside this file (every run: rep, cell, back end, Mpps, "
        "packets, wall time, serve's totals and idle share, or the error).",
        "",
    ]
    path.write_text("\n".join(lines))


def short_words(p: dict) -> str:
    """Beside a placement short of the goal with room left: how busy serve was, and how near
    the touch ceiling of the same rounds it ran."""
    words = []
    if p.get("serve_idle") is not None:
        words.append(f"serve idle {100 * p['serve_idle']:.0f} %")
    if p.get("n_vs_touch_pairs"):
        words.append(f"vhostlab / touch {p['vs_touch_paired']:.2f} on "
                     f"{p['n_vs_touch_pairs']} pair{'s' if p['n_vs_touch_pairs'] > 1 else ''}")
    return f" ({', '.join(words)})" if words else ""


def capped_words(rows: list[dict], where: str) -> str:
    """Of a placement's cells below the goal, those where even the touch ceiling is: no back
    end that reads its packets could reach the goal there, whatever it did."""
    below = [r for r in rows if r.get("placement") and judged_ratio(r["placement"][where])
             and judged_ratio(r["placement"][where]) < TARGET]
    if not below:
        return ""
    capped = [r for r in below if (touch_judged(r["placement"][where]) or TARGET) < TARGET]
    s = (f" Of the {len(below)} below the goal, {len(capped)} "
         f"{'is' if len(capped) == 1 else 'are'} out of reach for any back end that reads its "
         f"packets (the touch ceiling itself under {TARGET:.2f}× DPDK there)")
    if capped:
        s += ": " + ", ".join(f"`{r['cell']}` touch {touch_judged(r['placement'][where]):.2f}×, "
                              f"vhostlab {judged_ratio(r['placement'][where]):.2f}×"
                              for r in capped)
    return s + "."


def suspect_words(runs: list[dict]) -> str:
    sus, looked = suspect_runs(runs)
    if not looked:
        return ""
    return (f" A check on the classes: of the {looked} close and far runs of a cell and back "
            f"end whose close and far medians differ {SUSPECT_GAP:g}x or more, {len(sus)} ran "
            f"at a rate nearer the other placement's median (most likely a whole window in "
            f"the placement the probes missed)"
            + (": " + ", ".join(f"`{r['cell']}` {r['backend']} {r['mpps']:.2f} Mpps classed "
                                f"{r['placement']}" for r in sus[:8])
               + (f" and {len(sus) - 8} more" if len(sus) > 8 else "") if sus else "")
            + ".")


def placement_section(doc: dict) -> list[str]:
    """The per-placement table: each cell's medians over the runs the probes class close,
    and over those they class far."""
    runs = [r for r in doc["runs"] if "error" not in r and r["backend"] in ("dpdk", "vhostlab")]
    if not any(r.get("placement") for r in runs):
        return []
    count = {w: sum(1 for r in runs if r.get("placement") == w)
             for w in ("close", "far", "mixed", "unsteady")}
    # The latest fill's own words (an extension's, else the run's): what its runs aimed at.
    last_fill = (report_fills(doc["meta"]) or [None])[-1]
    # Runs of a serve with evict-after-read (its statistics count lines_evicted).
    evicts = any("lines_evicted" in r.get("serve", {}) for r in doc["runs"])
    touch_evicted = any(r["backend"] == "touch" and r.get("serve", {}).get("lines_evicted")
                        for r in doc["runs"])

    def cell(p: dict) -> str:
        t = (f"{p['touch_ratio']:.2f} ({p['n_touch']})" if p.get("touch_ratio")
             else "—")
        if p.get("n_touch_pairs"):
            t += f", paired {p['touch_paired']:.2f} ({p['n_touch_pairs']})"
        if p.get("n_vs_touch_pairs"):
            t += f"; vhostlab / touch {p['vs_touch_paired']:.2f} ({p['n_vs_touch_pairs']})"
        i = f"{100 * p['serve_idle']:.0f} %" if p.get("serve_idle") is not None else "—"
        if p.get("evicted"):
            i += f", ev {min(p['evicted'], 1):.2f}"
        if p.get("vhostlab_fe_dropped") is not None:
            i += f", full {100 * p['vhostlab_fe_dropped']:.1f} %"
            if p.get("dpdk_fe_dropped") is not None:
                i += f" (DPDK {100 * p['dpdk_fe_dropped']:.1f} %)"
        if p["dpdk"] is None and p["vhostlab"] is None:
            return "— | — | — | — | — | " + t
        d = f"{p['dpdk']:.2f} ({p['n_dpdk']})" if p["dpdk"] is not None else "—"
        v = f"{p['vhostlab']:.2f} ({p['n_vhostlab']})" if p["vhostlab"] is not None else "—"
        # **no** goes beside whichever ratio is judged (judged_ratio).
        j = judged_ratio(p)
        no = "" if j is None or j >= TARGET else " **no**"
        ratio = (f"{p['ratio']:.2f}" + ("" if p.get("n_pairs") else no)) if p["ratio"] else "—"
        paired = f"{p['paired']:.2f} ({p['n_pairs']}){no}" if p.get("n_pairs") else "—"
        return f"{d} | {v} | {ratio} | {paired} | {i} | {t}"

    lines = [
        "## By placement",
        "",
        "This VM's host moves its two virtual CPUs between two placements, every few seconds "
        "to minutes: close together (a cache line's round trip between them about 45 ns) "
        "and far apart (about 430 ns). Far, every front end and back end pair runs at roughly "
        "half its close rate or less, so a run only compares with a run of the same "
        "placement. "
        f"`vl_cpu_pingpong` measured the round trip just before the front end started "
        f"forwarding and just after it stopped (a polling serve paused for the few "
        f"milliseconds of the probe): "
        f"both under {PLACEMENT_FAR_NS:.0f} ns, close; both over, far; else the placement "
        f"changed during the run (mixed: left out here). It can also change and change back "
        f"between the probes, so the window is read every {STEADY_INTERVAL} s or so and a "
        f"run whose interval rates differ by more than {STEADY_MAX:.2f}x is unsteady, also "
        f"left out. Of the {len(runs)} DPDK and vhostlab runs, {count['close']} were close, "
        f"{count['far']} far, {count['mixed']} mixed, {count['unsteady']} unsteady"
        + (f", the fill runs included (`--fill`: each aimed at a cell and placement short "
           f"of {fill_k_words(doc['meta'])} "
           + ("pairs of DPDK and vhostlab or touch runs"
              if last_fill.get("touch_pairs")
              else "pairs or touch runs" if last_fill.get("pairs")
              else "steady runs of a back end")
           + "; the columns above take the repetitions only)."
           if last_fill else ".")
        + suspect_words(doc["runs"]),
        "",
        "Mpps: median over the runs of that placement (how many runs). Ratio: vhostlab / "
        "DPDK of those medians. Paired: the median, over the repetitions and fill rounds "
        "whose DPDK and vhostlab runs (seconds apart) were both steady in that placement, "
        "of vhostlab / DPDK within the pair (how many pairs; a pair with a run the check "
        "above names is left out): the ratio judged where there "
        "is a pair (**no** marks the judged ratio under the goal), as the machine's slow "
        "and fast spells, minutes long, move two medians over runs taken at different "
        "times apart more than they move the two runs of a pair. Touch / DPDK: the touch "
        "back end's median over that "
        "placement's runs (how many) against DPDK's, and paired as vhostlab is (how many "
        "pairs; the one a cell short of the goal is compared with, where it has one): the "
        "most any back end that reads its packets could reach there (guest→host cells"
        + (("; touch evicts the line it read as serve does, both with `--evict auto`"
            if touch_evicted else
            "; touch evicted no line in these runs, so where serve's evictions paid, which "
            "is far apart, it is no ceiling for serve") if evicts else "")
        + "). vhostlab / touch: the median over the rounds with a vhostlab and a touch run "
        "both steady in that placement of vhostlab / touch within the round (how many): how "
        "near the ceiling vhostlab ran, whether the round fell in a slow or a fast spell; "
        "under 1, the room a back end that reads its packets had left. Idle: the median over "
        "vhostlab's runs of that placement of the share of the window serve's loop spent in "
        "rounds that moved nothing (its live statistics, `idle_share`): high, serve waited "
        "for the front end, which set the rate; near 0, serve was busy all the time -- which "
        "alone does not make it the bottleneck, as both sides may be waiting on cache lines "
        "the other one holds."
        + (" ev: where serve evicted lines, the median of lines evicted per packet "
           "received (evict-after-read, one line a packet while on; its tuner turns it on "
           "where it pays, which is far apart)." if evicts else "")
        + (" full: the median share of the packets the front end made that it dropped "
           "because the ring had no room for them (testpmd's forward statistics, TX-dropped "
           "against TX-packets plus TX-dropped over the forwarding run, warm-up included), "
           "with vhostlab and, in brackets, with DPDK's back end: the time txonly spent "
           "making those packets is lost to it, so a back end that falls behind, even "
           "briefly, costs the front end rate on top of its own."
           if any("fe_dropped" in r for r in runs) else ""),
        "",
        "| cell | close: DPDK | close: vhostlab | close: ratio | close: paired "
        "| close: idle | close: touch / DPDK "
        "| far: DPDK | far: vhostlab | far: ratio | far: paired | far: idle "
        "| far: touch / DPDK |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in doc["cells"]:
        p = r.get("placement")
        if p:
            lines.append(f"| `{r['cell']}` | {cell(p['close'])} | {cell(p['far'])} |")
    return lines + [""]


def zero_copy_counts(rows: list[dict]) -> dict:
    """The zero-copy runs against DPDK, per cell and placement: how many cell-placements have
    runs of both, in how many the zero-copy median is at least TARGET times DPDK's, and
    the range of those ratios."""
    ratios = [r["placement"][w]["zc_ratio"] for r in rows if r.get("placement")
              for w in ("close", "far") if r["placement"][w].get("zc_ratio")]
    cells = sum(1 for r in rows if r.get("placement") and any(
        r["placement"][w].get("zc_ratio") for w in ("close", "far")))
    return {"placements": len(ratios), "cells": cells,
            "met": sum(1 for x in ratios if x >= TARGET),
            "range": (f"{min(ratios):.2f}× – {max(ratios):.2f}×" if ratios else "")}


def zero_copy_section(doc: dict) -> list[str]:
    """vhostlab with --zero-copy beside DPDK and vhostlab copying, per placement. Shown, not
    judged: DPDK 22.11 has no zero-copy dequeue, so only the copying runs compare like with
    like."""
    rows = [r for r in doc["cells"] if r.get("placement") and any(
        r["placement"][w].get("n_zc") for w in ("close", "far"))]
    if not rows:
        return []

    def cell(p: dict) -> str:
        def mpps(b: str) -> str:
            return f"{p[b]:.2f} ({p['n_' + b]})" if p.get(b) is not None else "—"
        zr = f"{p['zc_ratio']:.2f}" if p.get("zc_ratio") else "—"
        return f"{mpps('dpdk')} | {mpps('vhostlab')} | {mpps('zc')} | {zr}"

    lines = [
        "## Zero-copy dequeue",
        "",
        f"`vhostlab serve --zero-copy`: guest→host packets of {ZC_MIN_LEN} bytes or more "
        "reference the guest's buffers instead of being copied; each chain goes back to the "
        "guest when its packet is freed (here, in rxonly, at the end of the round that "
        "received it). Nothing reads the payload, as when a NIC sends the packet straight "
        "from guest memory. DPDK's vhost library had dequeue zero-copy and dropped it in "
        f"20.11; DPDK {doc['meta']['machine']['dpdk']}'s net_vhost copies every packet. So "
        "this is not part of the goal's verdict (there vhostlab copies, like DPDK); it "
        "shows what the feature buys against the same front end. Mpps: median over the "
        "runs of that placement (how many); zero-copy / DPDK: the ratio of those medians.",
        "",
        "| cell | close: DPDK | close: vhostlab (copy) | close: zero-copy "
        "| close: zero-copy / DPDK | far: DPDK | far: vhostlab (copy) | far: zero-copy "
        "| far: zero-copy / DPDK |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        p = r["placement"]
        lines.append(f"| `{r['cell']}` | {cell(p['close'])} | {cell(p['far'])} |")
    return lines + [""]


def write_plot(path: Path, doc: dict) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("note: python3-matplotlib is not installed: no plot (apt-get install "
            "python3-matplotlib)")
        return False
    rows = doc["cells"]
    x = list(range(len(rows)))
    fig, (ax, axr) = plt.subplots(2, 1, figsize=(max(8, 0.5 * len(rows) + 3), 9),
                                  sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    width = 0.38
    for off, b, color in ((-width / 2, "dpdk", "tab:gray"), (width / 2, "vhostlab", "tab:blue")):
        med = [r[b]["median"] if r.get(b) else 0 for r in rows]
        lo = [r[b]["median"] - r[b]["min"] if r.get(b) else 0 for r in rows]
        hi = [r[b]["max"] - r[b]["median"] if r.get(b) else 0 for r in rows]
        ax.bar([i + off for i in x], med, width, yerr=[lo, hi], capsize=2, color=color,
               label="DPDK vhost" if b == "dpdk" else "vhostlab serve")
    for b, color, label in (("null", "black", "null back end (ceiling)"),
                            ("touch", "tab:orange", "touch back end (ceiling when reading)"),
                            ("zc", "tab:purple", "vhostlab serve --zero-copy (not judged)")):
        nx = [i for i, r in enumerate(rows) if r.get(b)]
        if nx:
            ax.scatter(nx, [rows[i][b]["median"] for i in nx], marker="_", s=400,
                       color=color, linewidths=2, label=label, zorder=3)
    ax.set_ylabel("Mpps (median, min–max)")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ratios = [r["ratio"] or 0 for r in rows]
    axr.bar(x, ratios, 0.6, color=["tab:green" if v >= TARGET else "tab:red" for v in ratios])
    axr.axhline(1.0, color="black", linewidth=0.8)
    axr.axhline(TARGET, color="tab:green", linestyle="--", linewidth=0.8,
                label=f"goal {TARGET:.2f}×")
    axr.set_ylabel("vhostlab / DPDK")
    axr.legend(loc="upper right", fontsize=8)
    axr.grid(axis="y", alpha=0.3)
    axr.set_xticks(x)
    axr.set_xticklabels([r["cell"] for r in rows], rotation=90, fontsize=7)
    fig.suptitle("vhostlab serve vs DPDK vhost, DPDK virtio-user front end (testpmd)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# --- command line ------------------------------------------------------------------------

def check_window_args(p: argparse.ArgumentParser, a):
    """--reps, --seconds and --warmup, as every script that runs this front end takes them."""
    if a.reps < 1:
        p.error(f"--reps {a.reps}: must be at least 1")
    if not 0.2 <= a.seconds <= 60:
        p.error(f"--seconds {a.seconds}: must be in [0.2, 60]")
    if not 0 <= a.warmup <= 30:
        p.error(f"--warmup {a.warmup}: must be in [0, 30]")


def check_machine(p: argparse.ArgumentParser):
    """The programs a run needs, and a CPU each for the front end and the back end."""
    for tool in ("dpdk-testpmd", "taskset", "timeout", "stdbuf"):
        if shutil.which(tool) is None:
            p.error(f"{tool} not found (dpdk-testpmd: apt-get install dpdk-dev "
                    "librte-net-virtio23)")
    if (os.cpu_count() or 1) < 2:
        p.error("needs 2 CPUs: front end and back end each get one")


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Run DPDK testpmd (virtio-user) against DPDK's vhost back end and "
        "`vhostlab serve` in turn over the cell matrix; write vs-dpdk.md/.png/.json.",
        epilog="Cells are named RING-mrgM-ordO-SIZE-DIR, e.g. split-mrg1-ord1-64-g2h "
        "(DIR: g2h guest->host, h2g host->guest). The full matrix (32 cells, 3 reps: 96 DPDK "
        "runs, 192 serve runs with the null and touch ceilings) takes about 16 minutes on 2 CPUs; "
        "run "
        "it on a quiet machine.")
    p.add_argument("--quick", action="store_true",
                   help=f"smoke test: cells {QUICK_CELLS} (unless --cells), 1 rep, 1 s "
                   "window (unless given)")
    p.add_argument("--cells", help="comma-separated cell names or shell patterns, e.g. "
                   "'split-*-64-g2h,packed-mrg1-ord1-*' (default: all 32)")
    p.add_argument("--reps", type=int, help="repetitions per cell (default 3)")
    p.add_argument("--seconds", type=float, help="measuring window per run (default 3)")
    p.add_argument("--warmup", type=float, help="seconds of traffic before the window "
                   "(default 0.5)")
    p.add_argument("--fill", type=int, default=0, metavar="K",
                   help="after the repetitions, run more where a cell's per-placement "
                   "figures rest on fewer than K pairs of DPDK and vhostlab runs taken "
                   "back to back (both steady there) or K such pairs of DPDK and touch runs, "
                   "following the placement the host gives (default 0: no filling)")
    p.add_argument("--fill-minutes", type=float, default=30.0, metavar="M",
                   help="time budget of --fill (default 30)")
    p.add_argument("--out", type=Path, default=ROOT / "reports",
                   help="directory for vs-dpdk.md/.png/.json (default: reports/)")
    p.add_argument("--keep", action="store_true",
                   help="keep the work directory (testpmd logs, serve events) and name it")
    p.add_argument("--json", action="store_true",
                   help="also print the summary (cells, ratios, ceilings) as JSON on stdout")
    p.add_argument("--vhostlab", type=Path,
                   default=Path(os.environ.get("VHOSTLAB_BIN",
                                               ROOT / "build/release/cli/vhostlab")),
                   help="the build's vhostlab, or its vhostlab-fast (default: $VHOSTLAB_BIN "
                   "or build/release/cli/vhostlab); serve runs as vhostlab-fast (the "
                   "production program), which vl_memcpy_ceiling and vl_cpu_pingpong (the "
                   "placement probe) are expected beside")
    p.add_argument("--render", type=Path, metavar="JSON",
                   help="run nothing: write vs-dpdk.md, .png and .json into --out from the "
                   "vs-dpdk.json of an earlier run (its runs; cells and summary recomputed), "
                   "e.g. after a change to the report's text")
    p.add_argument("--extend", type=Path, metavar="JSON",
                   help="carry on an earlier run: load its vs-dpdk.json and fill more "
                   "(--fill K, default the K its last fill or extension aimed at, else 3; "
                   "--fill-minutes M) "
                   "where its cells -- or those --cells names -- rest on fewer than K pairs "
                   "per placement, with its window and serve arguments and the same serve "
                   "build; then write the report of all its runs and the new ones into --out")
    p.add_argument("--serve-arg", action="append", default=None, metavar="ARG",
                   help="an extra argument for every vhostlab serve (repeatable; default "
                   "--poll, as DPDK's back end polls too)")
    a = p.parse_args(argv)
    if a.render and a.extend:
        p.error("--render and --extend: one at a time (--render runs nothing, --extend runs "
                "more)")
    if a.extend:
        # The runs added must compare with the earlier ones: same window, same serve.
        for opt, val in (("--quick", a.quick or None), ("--reps", a.reps),
                         ("--seconds", a.seconds), ("--warmup", a.warmup),
                         ("--serve-arg", a.serve_arg)):
            if val is not None:
                p.error(f"{opt}: --extend takes it from the run it carries on ({a.extend})")
        if not a.extend.is_file():
            p.error(f"--extend {a.extend}: no such file")
    a.reps = a.reps if a.reps is not None else (1 if a.quick else 3)
    a.seconds = a.seconds if a.seconds is not None else (1.0 if a.quick else 3.0)
    a.warmup = a.warmup if a.warmup is not None else 0.5
    if a.serve_arg is None:
        a.serve_arg = ["--poll"]
    check_window_args(p, a)
    if not 0 <= a.fill <= 20:
        p.error(f"--fill {a.fill}: must be in [0, 20]")
    if not 0 < a.fill_minutes <= 600:
        p.error(f"--fill-minutes {a.fill_minutes}: must be in (0, 600]")
    if a.render:
        if not a.render.is_file():
            p.error(f"--render {a.render}: no such file")
        return a
    pattern = a.cells or (QUICK_CELLS if a.quick else "*")
    pats = [s.strip() for s in pattern.split(",") if s.strip()]
    a.cell_list = [c for c in ALL_CELLS if any(fnmatch.fnmatchcase(c.id, q) for q in pats)]
    if not a.cell_list:
        p.error(f"--cells {pattern!r} names no cell (e.g. split-mrg1-ord1-64-g2h; "
                f"patterns like 'packed-*-1518-*' work)")
    if not os.access(a.vhostlab, os.X_OK):
        p.error(f"--vhostlab {a.vhostlab}: not an executable (build it, or set VHOSTLAB_BIN)")
    if (a.fill or a.extend) and not os.access(a.vhostlab.parent / "vl_cpu_pingpong", os.X_OK):
        p.error(f"{'--extend' if a.extend else f'--fill {a.fill}'}: needs the placement probe "
                f"{a.vhostlab.parent / 'vl_cpu_pingpong'} (build the vl_cpu_pingpong target)")
    if not os.access(serve_program(a.vhostlab), os.X_OK):
        p.error(f"{serve_program(a.vhostlab)} is missing: serve runs as vhostlab-fast, the "
                "production program; build the vhostlab-fast target")
    check_machine(p)
    return a


def write_report(a, doc: dict, how: str):
    """The three files into --out; with --json, the summary on stdout."""
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "vs-dpdk.json").write_text(json.dumps(doc, indent=1) + "\n")
    write_markdown(a.out / "vs-dpdk.md", doc)
    write_plot(a.out / "vs-dpdk.png", doc)
    log(f"wrote {a.out / 'vs-dpdk.md'}, .png, .json {how}")
    if a.json:
        print(json.dumps({k: doc[k] for k in ("meta", "cells", "memcpy")}, indent=1))


def load_report(path: Path, opt: str) -> tuple[dict, list[Cell]] | None:
    """An earlier run's vs-dpdk.json and its cells, its summary recomputed from its runs;
    None (said why) when it is not one."""
    try:
        doc = json.loads(path.read_text())
        by_id = {c.id: c for c in ALL_CELLS}
        cells = [by_id[r["cell"]] for r in doc["cells"]]
        doc["cells"] = summarize(cells, doc["runs"])
        # What --extend runs with: the runs it adds must compare with these.
        missing = [k for k in ("reps", "seconds", "warmup", "serve_args", "negotiated")
                   if k not in doc["meta"]]
        if missing:
            raise KeyError(f"meta has no {', '.join(missing)}")
        check_fills(doc["meta"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        log(f"{opt} {path}: not a vs-dpdk.json ({type(e).__name__}: {e})")
        return None
    return doc, cells


def render(a) -> int:
    """--render: the report of an earlier run, from its JSON, recomputed from its runs."""
    got = load_report(a.render, "--render")
    if got is None:
        return 2
    write_report(a, got[0], f"from {a.render}")
    return 0


def file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def extend(a, cmdline: str, date: str) -> int:
    """--extend: more fill rounds on an earlier run's cells (those --cells names among them),
    with its window, serve arguments and serve build, then the report of all the runs. The
    new runs pair among themselves (fresh `rep` numbers), never with the earlier ones."""
    got = load_report(a.extend, "--extend")
    if got is None:
        return 2
    doc, cells = got
    meta = doc["meta"]
    sha = file_sha256(serve_program(a.vhostlab))
    if meta.get("serve_sha256") and meta["serve_sha256"] != sha:
        log(f"--extend {a.extend}: its runs were made with another serve build (vhostlab-fast "
            f"sha256 {meta['serve_sha256'][:12]}, this one {str(sha)[:12]}): runs of two "
            "builds do not compare; build that one, or start a new report")
        return 2
    if not meta.get("serve_sha256"):
        log(f"--extend {a.extend}: it names no serve build (made before the report recorded "
            "one); taking this one for it")
    target = [c for c in cells if c in a.cell_list]
    if not target:
        log(f"--extend {a.extend}: --cells names none of its cells ("
            + ", ".join(c.id for c in cells) + ")")
        return 2
    k = a.fill or (fill_ks(meta) or [3])[-1]  # the K its last fill aimed at
    a.reps, a.seconds, a.warmup = meta["reps"], meta["seconds"], meta["warmup"]
    a.serve_arg = list(meta["serve_args"])
    log(f"vs-dpdk --extend: {len(doc['runs'])} runs of {len(cells)} cells loaded; filling "
        f"{len(target)} of them to {k} pairs per placement, up to {a.fill_minutes:g} min")
    bench = Bench(a)
    bench.runs = doc["runs"]
    before = {cfg: dict(v) for cfg, v in meta["negotiated"].items()}
    bench.negotiated = meta["negotiated"]
    try:
        fill = bench.fill(target, k, a.fill_minutes * 60)
    except KeyboardInterrupt:
        log("interrupted: no report written")
        return 1
    finally:
        bench.cleanup()
    for cfg, now in bench.negotiated.items():
        for b, feats in now.items():
            if before.get(cfg, {}).get(b, feats) != feats:
                log(f"warning: {b} negotiated {feats} for {cfg} where the earlier runs had "
                    f"{before[cfg][b]}")
    fill["short_after"] = {w: fill_needs(cells, bench.runs, w, k) for w in ("close", "far")}
    meta["serve_sha256"] = sha
    meta.setdefault("extended", []).append(
        {"command": cmdline, "date": date, "cells": [c.id for c in target], "fill": fill,
         "load_start": os.getloadavg()[0]})
    doc["cells"] = summarize(cells, bench.runs)
    write_report(a, doc, f"(extended {fill['seconds'] / 60:.1f} min)")
    added = bench.runs[len(bench.runs) - fill["runs"]:]
    return 1 if any("error" in r for r in added) else 0


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.render:
        return render(a)
    cmdline = "scripts/vs_dpdk.py " + " ".join(argv if argv is not None else sys.argv[1:])
    load_start = os.getloadavg()[0]
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    if a.extend:
        return extend(a, cmdline.strip(), date)
    log(f"vs-dpdk: {len(a.cell_list)} cells x {a.reps} reps, {a.seconds} s windows; "
        f"front end CPU {FE_CPU}, back ends CPU {BE_CPU}")
    mc = memcpy_ceiling(a.vhostlab, 0.2 if a.quick else 0.5)
    bench = Bench(a)
    fill = None
    try:
        duration = bench.run(a.cell_list)
        if a.fill:
            fill = bench.fill(a.cell_list, a.fill, a.fill_minutes * 60)
            duration += fill["seconds"]
    except KeyboardInterrupt:
        log("interrupted: no report written")
        return 1
    finally:
        bench.cleanup()
    rows = summarize(a.cell_list, bench.runs)
    doc = {
        "meta": {"command": cmdline.strip(), "date": date, "reps": a.reps,
                 "seconds": a.seconds, "warmup": a.warmup, "duration_seconds": duration,
                 "load_start": load_start, "load_end": os.getloadavg()[0],
                 "machine": machine(), "fe_cpu": FE_CPU, "be_cpu": BE_CPU,
                 "serve_args": a.serve_arg, "serve_exe": bench.serve_exe,
                 "serve_sha256": file_sha256(Path(bench.serve_exe or "?")),
                 "negotiated": bench.negotiated, "target": TARGET, "fill": fill},
        "cells": rows,
        "memcpy": mc,
        "runs": bench.runs,
    }
    write_report(a, doc, f"({duration / 60:.1f} min)")
    return 1 if any("error" in r for r in bench.runs) else 0


if __name__ == "__main__":
    sys.exit(main())
