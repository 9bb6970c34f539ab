#!/usr/bin/python3
"""Instructions per packet of vhostlab and of DPDK's vhost library, under the same front end,
counted inside each library's burst call (issue 59, item 1).

The front end is DPDK 22.11 testpmd with a virtio-user port in server mode, started first;
the back end connects to it as a client and runs under `valgrind --tool=callgrind`,
collecting only inside the library's entry point of the cell's direction:
  vhostlab  `vhostlab-fast serve --client --poll` (the production program and core),
            vl_net_dequeue (guest->host, --mode rxonly) or vl_net_enqueue (host->guest,
            --mode txonly);
  dpdk      testpmd with a net_vhost port (client=1), rte_vhost_dequeue_burst (rxonly) or
            rte_vhost_enqueue_burst (txonly), reached through an LD_PRELOAD shim
            (scripts/vsdpdk/burst_count.c) that also counts the calls that moved nothing.
Each back end is measured loaded (the front end forwarding for --seconds) and idle (the
front end stopped: every call finds nothing), and the figures are derived as
scripts/vsdpdk/figures.py says: raw (instructions over packets) and on full bursts (the
empty calls taken out at the idle run's cost per call, the calls partial bursts added
charged the same). Over the 32 cells of scripts/vs_dpdk.py: split/packed x mergeable on/off x
in-order on/off x 64/1518 B x guest->host/host->guest.

Writes OUT/vs-dpdk-instructions.json and OUT/vs-dpdk-instructions.md (OUT: reports/ by
default). Progress on stderr. Exit status 0 when every cell measured, 1 when one failed,
2 on a usage error. Instruction counts do not depend on the machine's load; wall-clock
does, and nothing here is timed.

Debian packages: dpdk-dev, librte-net-virtio23 (testpmd), valgrind, gcc (the shim),
util-linux (taskset), coreutils (timeout, stdbuf's library).
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import vs_dpdk as vs  # noqa: E402
from vsdpdk import cgfile, figures  # noqa: E402

ROOT = vs.ROOT
SHIM_SRC = Path(__file__).resolve().parent / "vsdpdk" / "burst_count.c"
# stdbuf(1) works by preloading this library; testpmd under valgrind gets it the same way
# (stdbuf itself would be the program valgrind runs), so its answers reach the log by line.
STDBUF_LIB = Path("/usr/libexec/coreutils/libstdbuf.so")
# The shim's layout (burst_count.c): per entry point calls, empty, packets, offered, over
# and a histogram of 513 buckets, dequeue then enqueue.
HIST_MAX = 512
COUNTS_WORDS = 5 + HIST_MAX + 1
ENTRY = {"vhostlab": {"g2h": "vl_net_dequeue", "h2g": "vl_net_enqueue"},
         "dpdk": {"g2h": "vlcount_dequeue", "h2g": "vlcount_enqueue"}}
DPDK_REAL = {"g2h": "rte_vhost_dequeue_burst", "h2g": "rte_vhost_enqueue_burst"}
QUICK_CELLS = "split-mrg0-ord1-64-g2h,packed-mrg1-ord0-64-h2g"
# testpmd under valgrind takes 20-30 s to start on a busy 2-CPU machine.
CG_START_TIMEOUT = 180.0
FILL_SECONDS = 1.0  # host->guest: the back end fills the stopped front end's ring first
DRAIN_SECONDS = 1.0  # after the front end stops: the back end empties or fills the ring


def log(msg: str):
    print(msg, file=sys.stderr, flush=True)


# --- the programs under callgrind ------------------------------------------------------

def build_shim(workdir: Path) -> Path:
    out = workdir / "burst_count.so"
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise vs.RunError("no C compiler (cc, gcc) for the shim")
    proc = subprocess.run([cc, "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-shared",
                           "-fPIC", "-o", str(out), str(SHIM_SRC), "-ldl"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise vs.RunError(f"building {SHIM_SRC} failed:\n{proc.stderr}")
    return out


def valgrind_argv(out: Path, toggles: list[str]) -> list[str]:
    return (["valgrind", "--tool=callgrind", "--collect-atstart=no"]
            + [f"--toggle-collect={t}" for t in toggles]
            + [f"--callgrind-out-file={out}"])


class CgTestPmd(vs.TestPmd):
    """testpmd with a net_vhost port (client) on the back-end CPU, under callgrind, the shim
    preloaded; commands on stdin as vs_dpdk.TestPmd."""

    def __init__(self, name: str, workdir: Path, prefix: str, sock: Path, shim: Path,
                 counts: Path, cg_out: Path):
        self.name = name
        self.counts = counts
        self.cg_out = cg_out
        self.dumps = 0
        argv = (["env", f"LD_PRELOAD={STDBUF_LIB}:{shim}", "_STDBUF_O=L",
                 f"VLCOUNT_OUT={counts}", "taskset", "-c", str(vs.BE_CPU)]
                + valgrind_argv(cg_out, list(ENTRY["dpdk"].values()))
                + ["dpdk-testpmd", "--no-huge", "-m", "256", "--no-pci",
                   f"--file-prefix={prefix}", "--lcores", f"0@{vs.BE_CPU},1@{vs.BE_CPU}",
                   "--vdev", f"net_vhost0,iface={sock},queues=1,client=1",
                   "--", "-i", "--total-num-mbufs=16384", "--forward-mode=rxonly"])
        vs.Proc.__init__(self, argv, workdir / f"{name}.log", stdin=subprocess.PIPE)
        self._seen = 0

    def read_counts(self) -> dict:
        """The shim's counts now: {"g2h": {...}, "h2g": {...}} (dequeue, enqueue)."""
        data = self.counts.read_bytes()
        words = struct.unpack(f"={2 * COUNTS_WORDS}Q", data[:16 * COUNTS_WORDS])
        out = {}
        for i, d in enumerate(("g2h", "h2g")):
            w = words[i * COUNTS_WORDS:(i + 1) * COUNTS_WORDS]
            out[d] = {"calls": w[0], "empty": w[1], "packets": w[2], "offered": w[3],
                      "hist": list(w[5:])}
        return out


def callgrind_control(pid: int, *args: str):
    proc = subprocess.run(["callgrind_control", *args, str(pid)], capture_output=True,
                          text=True, timeout=120)
    if proc.returncode != 0 or "OK" not in proc.stdout:
        raise vs.RunError(f"callgrind_control {' '.join(args)} {pid}: {proc.stdout}"
                          f"{proc.stderr}")


def dump(proc: vs.Proc, cg_out: Path, n: int) -> Path:
    """Have callgrind write what it counted since the last dump or zeroing (its file
    cg_out.n, n counting this process's dumps from 1) and start again from 0."""
    callgrind_control(proc.child_pid(), f"--dump=phase{n}")
    path = Path(f"{cg_out}.{n}")
    deadline = time.monotonic() + 60
    while not path.exists() or path.stat().st_size == 0 or "totals:" not in path.read_text(
            errors="replace"):
        if time.monotonic() > deadline:
            raise vs.RunError(f"callgrind wrote no {path}")
        time.sleep(0.05)
    return path


class CgServe(vs.Serve):
    """`vhostlab-fast serve --client` under callgrind, collecting inside `entry`."""

    start_timeout = CG_START_TIMEOUT  # valgrind starts serve slowly

    def __init__(self, vhostlab: Path, workdir: Path, n: int, sock: Path, mode: str,
                 size: int, entry: str, cg_out: Path):
        self.sock = sock
        self.cg_out = cg_out
        argv = (["taskset", "-c", str(vs.BE_CPU)] + valgrind_argv(cg_out, [entry])
                + [str(vs.serve_program(vhostlab)), "serve", "--client", "--socket",
                   str(sock), "--mode", mode, "--size", str(size), "--json", "--poll"])
        self.t0 = time.monotonic()
        vs.Proc.__init__(self, argv, workdir / f"serve{n}.err", stdout=subprocess.PIPE)


    def stop(self) -> dict:
        if self.proc.poll() is None:
            os.kill(self.child_pid(), 2)  # SIGINT: serve prints its totals, callgrind dumps
        try:
            out, _ = self.proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            self.kill()
            raise vs.RunError(f"serve did not stop on SIGINT\n{vs.tail(self.log)}")
        self._logf.close()
        if self.proc.returncode != 0:
            raise vs.RunError(f"serve exited {self.proc.returncode}\n{out}\n{vs.tail(self.log)}")
        return json.loads(out)


def front_end_vdev(cfg: tuple, sock: Path) -> str:
    ring, mrg, ord_ = cfg
    return (f"net_virtio_user0,path={sock},queues=1,packed_vq={int(ring == 'packed')},"
            f"mrg_rxbuf={mrg},in_order={ord_},server=1")


def set_modes(fe: vs.TestPmd, be: vs.TestPmd | None, cell: vs.Cell):
    """The front end sends (guest->host) or receives; a testpmd back end the other."""
    if cell.dir == "g2h":
        fe.cmd("set fwd txonly", f"set txpkts {cell.size}")
        if be:
            be.cmd("set fwd rxonly")
    else:
        fe.cmd("set fwd rxonly")
        if be:
            be.cmd("set fwd txonly", f"set txpkts {cell.size}")


# --- one ring configuration of DPDK, one cell of vhostlab ------------------------------

class Runner:
    def __init__(self, a):
        self.a = a
        self.workdir = Path(tempfile.mkdtemp(prefix="vhl-vsi-"))
        self.shim = build_shim(self.workdir)
        self.n = 0
        self.prefixes: list[str] = []
        self.negotiated: dict[str, dict] = {}

    def next(self) -> int:
        self.n += 1
        return self.n

    def prefix(self) -> str:
        p = f"vsi{os.getpid()}-{self.next()}"
        self.prefixes.append(p)
        return p

    def dpdk_config(self, cfg: tuple, cells: list[vs.Cell]) -> dict:
        """DPDK's back end for every cell of one ring configuration, in one process: per
        cell an idle phase and a loaded one, each between a zeroing and a dump of callgrind
        and two readings of the shim, taken while forwarding is stopped (no call under
        way). Returns {cell id: {"idle": counts, "loaded": counts}}."""
        n = self.next()
        sock = self.workdir / f"d{n}.sock"
        fe = vs.TestPmd(f"fe_d{n}", self.workdir, self.prefix(), vs.FE_CPU,
                        front_end_vdev(cfg, sock))
        cg_out = self.workdir / f"cg_dpdk{n}.out"
        counts = self.workdir / f"counts{n}.bin"
        counts.unlink(missing_ok=True)
        be = CgTestPmd(f"be_d{n}", self.workdir, self.prefix(), sock, self.shim, counts,
                       cg_out)
        out = {}
        try:
            be.stats(timeout=CG_START_TIMEOUT)
            fe.stats(timeout=CG_START_TIMEOUT)
            deadline = time.monotonic() + CG_START_TIMEOUT
            while "ready for processing" not in be.log.read_text(errors="replace"):
                if time.monotonic() > deadline or be.proc.poll() is not None:
                    raise vs.RunError(f"DPDK's back end never connected\n{vs.tail(be.log)}")
                time.sleep(0.1)
            m = re.findall(r"negotiated Virtio features: (0x[0-9a-f]+)",
                           be.log.read_text(errors="replace"))
            self.negotiated.setdefault(vs.cfg_name(cfg), {})["dpdk"] = m[-1] if m else "?"
            pid = be.child_pid()
            for cell in cells:
                set_modes(fe, be, cell)
                for p in (fe, be):
                    p.stats(timeout=CG_START_TIMEOUT)
                if cell.dir == "h2g":  # fill the stopped front end's ring before idling
                    be.cmd("start")
                    time.sleep(FILL_SECONDS)
                    be.cmd("stop")
                    be.stats(timeout=CG_START_TIMEOUT)
                res = {}
                for phase in ("idle", "loaded"):
                    callgrind_control(pid, "--zero")
                    before = be.read_counts()[cell.dir]
                    be.cmd("start")
                    if phase == "loaded":
                        fe.cmd("start")
                    time.sleep(self.a.idle_seconds if phase == "idle" else self.a.seconds)
                    if phase == "loaded":
                        fe.cmd("stop")
                        fe.stats()
                        time.sleep(DRAIN_SECONDS)
                    be.cmd("stop")
                    be.stats(timeout=CG_START_TIMEOUT)  # forwarding has stopped
                    be.dumps += 1
                    path = dump(be, cg_out, be.dumps)
                    after = be.read_counts()[cell.dir]
                    res[phase] = dpdk_counts(cgfile.read_callgrind(path), cell.dir, before,
                                             after)
                out[cell.id] = res
                log(f"  dpdk     {cell.id:26} " + phase_words(res))
        finally:
            for p in (fe, be):
                p.quit()
            for p in (fe, be):
                p.wait_gone(60.0)
        return out

    def vhostlab_cell(self, cell: vs.Cell) -> dict:
        """serve for one cell, under callgrind: loaded from its start until a dump after the
        front end stopped, then idle until it exits. serve's totals (calls, empty calls,
        packets over its life) split between the two by callgrind's call counts: every
        call of the idle part is empty."""
        n = self.next()
        sock = self.workdir / f"v{n}.sock"
        fe = vs.TestPmd(f"fe_v{n}", self.workdir, self.prefix(), vs.FE_CPU,
                        front_end_vdev(cell.config, sock))
        cg_out = self.workdir / f"cg_serve{n}.out"
        entry = ENTRY["vhostlab"][cell.dir]
        serve = None
        try:
            # A virtio-user server takes no command before its back end connects.
            serve = CgServe(self.a.vhostlab, self.workdir, n, sock,
                            "rxonly" if cell.dir == "g2h" else "txonly", cell.size, entry,
                            cg_out)
            ev = serve.wait_running()
            fe.stats(timeout=CG_START_TIMEOUT)
            m = re.search(r"features (0x[0-9a-f]+)", ev["message"])
            self.negotiated.setdefault(vs.cfg_name(cell.config), {})["vhostlab"] = (
                m.group(1) if m else "?")
            set_modes(fe, None, cell)
            fe.stats()
            fe.cmd("start")
            time.sleep(self.a.seconds)
            fe.cmd("stop")
            fe.stats()
            time.sleep(DRAIN_SECONDS)
            loaded = cgfile.read_callgrind(dump(serve, cg_out, 1))
            time.sleep(self.a.idle_seconds)
            final = serve.stop()
            idle = cgfile.read_callgrind(cg_out)
        finally:
            fe.quit()
            fe.wait_gone(15.0)
            if serve:
                serve.kill()
        if final.get("core") != "production":
            raise vs.RunError(f"serve ran on the {final.get('core')} core, not the production "
                              "one")
        res = vhostlab_counts(loaded, idle, final, cell.dir, entry)
        # Where the instructions go, the empty calls' share taken out function by function
        # (the idle part's costs scaled to the loaded part's empty calls).
        res["loaded"]["top"] = cgfile.top_functions(
            Path(f"{cg_out}.1"), res["loaded"]["packets"], idle=cg_out,
            idle_scale=res["loaded"]["empty_calls"] / max(res["idle"]["calls"], 1))
        log(f"  vhostlab {cell.id:26} " + phase_words(res))
        return res

    def cleanup(self):
        for p in self.prefixes:
            shutil.rmtree(Path("/var/run/dpdk") / p, ignore_errors=True)
        if self.a.keep:
            log(f"logs kept in {self.workdir}")
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)


def dpdk_counts(dump_: cgfile.CgDump, d: str, before: dict, after: dict) -> dict:
    """One DPDK phase: instructions and calls of the real entry point (the call edge from
    the shim's vlcount_* into librte_vhost, which leaves the shim's own few instructions
    out), packets and empty calls from the shim's counts across the phase."""
    calls, instr = dump_.calls_from(ENTRY["dpdk"][d])
    shim_calls = after["calls"] - before["calls"]
    if calls != shim_calls:
        raise vs.RunError(f"callgrind counted {calls} calls of {DPDK_REAL[d]}, the shim "
                          f"{shim_calls}")
    hist = [a - b for a, b in zip(after["hist"], before["hist"])]
    return {"instructions": instr, "calls": calls,
            "empty_calls": after["empty"] - before["empty"],
            "packets": after["packets"] - before["packets"],
            "offered": after["offered"] - before["offered"],
            "partial_calls": sum(hist[1:figures.BURST]),
            "nonempty_calls": calls - (after["empty"] - before["empty"])}


def vhostlab_counts(loaded: cgfile.CgDump, idle: cgfile.CgDump, final: dict, d: str,
                    entry: str) -> dict:
    """serve's two parts from callgrind's dumps and serve's life totals (queue 0): the
    idle part's calls are all empty, so the loaded part has the rest of the empty calls and
    every packet."""
    q = final["ports"][0]["queues"][0]
    calls_total, empty_total, packets = (
        (q["rx_polls"], q["rx_idle_polls"], q["rx_packets"]) if d == "g2h"
        else (q["tx_bursts"], q["tx_no_room_bursts"], q["tx_packets"]))
    n_loaded, _ = loaded.calls_into(entry)
    n_idle, _ = idle.calls_into(entry)
    if n_loaded + n_idle != calls_total:
        raise vs.RunError(f"callgrind counted {n_loaded} + {n_idle} calls of {entry}, serve "
                          f"{calls_total}")
    if empty_total < n_idle:
        raise vs.RunError(f"serve counted {empty_total} empty calls of {entry}, fewer than "
                          f"the {n_idle} of its idle part")
    empty = empty_total - n_idle
    return {"idle": {"instructions": idle.total, "calls": n_idle, "empty_calls": n_idle,
                     "packets": 0, "nonempty_calls": 0},
            "loaded": {"instructions": loaded.total, "calls": n_loaded,
                       "empty_calls": empty, "packets": packets,
                       "nonempty_calls": n_loaded - empty}}


def phase_words(res: dict) -> str:
    i, ld = res["idle"], res["loaded"]
    e = i["instructions"] / i["calls"] if i["calls"] else float("nan")
    return (f"idle {i['calls']} calls, {e:.1f} instr each; loaded {ld['packets']} packets, "
            f"{ld['calls']} calls ({ld['empty_calls']} empty), "
            f"{ld['instructions'] / max(ld['packets'], 1):.1f} instr/packet raw")


# --- from counts to the report ---------------------------------------------------------

def backend_figures(res: dict) -> dict:
    e = figures.empty_cost(res["idle"])
    f = figures.figures(res["loaded"], e)
    return {**f, "empty_cost": e, "empty_calls": res["loaded"]["empty_calls"],
            "calls": res["loaded"]["calls"], "packets": res["loaded"]["packets"],
            "instructions": res["loaded"]["instructions"],
            "idle_calls": res["idle"]["calls"],
            "idle_nonempty_calls": res["idle"].get("nonempty_calls", 0),
            "partial_calls": res["loaded"].get("partial_calls")}


def cell_row(cell: vs.Cell, dpdk: dict, vhl: dict) -> dict:
    fd, fv = backend_figures(dpdk), backend_figures(vhl)
    return {"cell": cell.id, "ring": cell.ring, "mrg": cell.mrg, "ord": cell.ord,
            "size": cell.size, "dir": cell.dir,
            "vhostlab": round(fv["full_burst"], 1), "dpdk": round(fd["full_burst"], 1),
            "ratio": round(fv["full_burst"] / fd["full_burst"], 3),
            "raw_ratio": round(fv["raw"] / fd["raw"], 3),
            "empty_calls": {"vhostlab": fv["empty_calls"], "dpdk": fd["empty_calls"]},
            "packets_per_call": {"vhostlab": round(fv["packets_per_call"], 2),
                                 "dpdk": round(fd["packets_per_call"], 2)},
            "raw": {"vhostlab": round(fv["raw"], 1), "dpdk": round(fd["raw"], 1)},
            "empty_cost": {"vhostlab": round(fv["empty_cost"], 1),
                           "dpdk": round(fd["empty_cost"], 1)},
            "detail": {"vhostlab": vhl, "dpdk": dpdk},
            "top": vhl["loaded"].get("top", [])}


def render_md(doc: dict) -> str:
    cells = doc["cells"]
    lines = [
        "# Instructions per packet: vhostlab against DPDK's vhost library",
        "",
        f"Made by `{doc['command']}` on {doc['date']} at commit `{doc['commit']}`, against "
        f"DPDK {doc['dpdk_version']}, in {doc['duration_minutes']:.1f} minutes "
        f"({len(cells)} of 32 cells). Regenerate with `./lab vs-dpdk-instructions`.",
        "",
    ]
    for h in doc.get("history", []):
        lines += [f"Merged into the report of `{h['command']}` ({h['date']}, commit "
                  f"`{h['commit']}`): cells not named by the command above are that run's.",
                  ""]
    for f in doc.get("failed", []):
        lines += [f"**Failed:** `{f['cell']}`: {f['error'].splitlines()[0]}", ""]
    lines += [
        "Instructions counted by callgrind inside each library's burst call, per packet "
        "it moved. **vhostlab** and **DPDK** are the full-burst figures (method below), "
        "**ratio** vhostlab / DPDK on them; raw is the run's instructions over its packets "
        "as measured. empty: the loaded run's calls that moved nothing (share of its "
        "calls); pkts/call: packets per call that moved some (32 = every such call full).",
        "",
        "| cell | vhostlab | DPDK | ratio | raw vhostlab | raw DPDK | raw ratio | "
        "empty vhostlab | empty DPDK | pkts/call vhostlab | pkts/call DPDK |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for c in cells:
        det = c["detail"]

        def share(b):
            n = det[b]["loaded"]["calls"]
            return f"{c['empty_calls'][b]} ({100 * c['empty_calls'][b] / n:.0f} %)" if n else "-"

        ratio = f"**{c['ratio']:.2f}**" if c["ratio"] > 1.0 else f"{c['ratio']:.2f}"
        lines.append(
            f"| `{c['cell']}` | {c['vhostlab']:.1f} | {c['dpdk']:.1f} | {ratio} | "
            f"{c['raw']['vhostlab']:.1f} | {c['raw']['dpdk']:.1f} | {c['raw_ratio']:.2f} | "
            f"{share('vhostlab')} | {share('dpdk')} | "
            f"{c['packets_per_call']['vhostlab']:.2f} | {c['packets_per_call']['dpdk']:.2f} |")
    over = [c for c in cells if c["ratio"] > 1.0]
    lines += ["", f"Cells where vhostlab executes more than DPDK (ratio > 1.0): "
              + (", ".join(f"`{c['cell']}` {c['ratio']:.2f}" for c in over) or "none") + ".",
              f"Cells at or under the aim of 0.5: "
              f"{sum(1 for c in cells if c['ratio'] <= 0.5)} of {len(cells)}.", ""]
    lines += ["## Method", ""] + [doc["method"], ""]
    lines += ["## Negotiated features", "", "| configuration | vhostlab | DPDK |",
              "| --- | --- | --- |"]
    for cfg, v in sorted(doc.get("negotiated", {}).items()):
        lines.append(f"| {cfg} | {v.get('vhostlab', '?')} | {v.get('dpdk', '?')} |")
    lines += ["", "## Where vhostlab's instructions go", "",
              "Per cell, the functions callgrind_annotate ranks highest by inclusive cost "
              "inside vhostlab's entry point over the loaded run, in instructions per "
              "packet, inclusive / self, with the empty calls' share taken out function by "
              "function (the idle run's cost of each, scaled to the loaded run's empty "
              "calls); the partial-burst correction is not applied here, so the entry "
              "point's inclusive figure can sit a little above the table's.", ""]
    for c in cells:
        tops = ", ".join(f"`{t['function']}` {t['inclusive']:.0f} / {t['self']:.0f}"
                         for t in c.get("top", []))
        lines.append(f"- `{c['cell']}`: {tops or '(none recorded)'}")
    return "\n".join(lines) + "\n"


METHOD = (
    "Front end: DPDK testpmd with a virtio-user port (server=1, queues=1, the cell's "
    "packed_vq, mrg_rxbuf, in_order), started first on CPU {fe}; guest->host it runs txonly "
    "with the cell's frame size, host->guest rxonly. Back end: a client on CPU {be} under "
    "`valgrind --tool=callgrind --collect-atstart=no --toggle-collect=ENTRY`, so only the "
    "entry point's instructions count (what it calls included). vhostlab: `vhostlab-fast "
    "serve --client --poll`, rxonly with ENTRY vl_net_dequeue or txonly (the cell's size) "
    "with vl_net_enqueue; neither counts the packet free or frame generation outside the "
    "call. DPDK: testpmd with net_vhost (client=1), rxonly or txonly, its calls to "
    "rte_vhost_dequeue_burst / rte_vhost_enqueue_burst passing through an LD_PRELOAD shim "
    "(scripts/vsdpdk/burst_count.c) whose noinline vlcount_* wrapper is ENTRY; the "
    "instructions taken are the inclusive cost of the call edge from vlcount_* into "
    "librte_vhost, which leaves out the wrapper's own 8 or so per call. Both ask 32 packets "
    "a call. Each back end runs a loaded phase ({secs:g} s of front-end traffic, then "
    "{drain:g} s for the back end to drain or fill the ring) and an idle phase ({idle:g} s, "
    "front end stopped: every call finds nothing to take, or no room host->guest; "
    "host->guest the ring is filled before it). DPDK: one testpmd per ring configuration, "
    "its phases cut by `callgrind_control --zero` and `--dump` while forwarding is stopped, "
    "calls, empty calls and packets read from the shim's counters at the same points (and "
    "the calls checked against callgrind's). vhostlab: one serve per cell, loaded from its "
    "start to a dump, idle from there to its exit; calls from callgrind's call counts in "
    "each part, empty calls and packets from serve's totals (rx_polls / rx_idle_polls / "
    "rx_packets, or tx_bursts / tx_no_room_bursts / tx_packets), the idle part's calls all "
    "empty (checked: serve's calls equal callgrind's). Figures, per back end: raw = T / P; "
    "E = idle instructions / idle calls; full burst = (T - E * N0 - E * (N1 - P / 32)) / P, "
    "with T the loaded phase's instructions, P its packets, N0 its empty calls, N1 its calls "
    "that moved packets: the empty calls are taken out at the idle cost, and each call "
    "partial bursts needed beyond P / 32 full ones is charged the same fixed cost E (the "
    "only per-call cost measured alone; a call that moves packets also does per-burst work "
    "an empty one skips, so where bursts are partial a little per-call cost stays in the "
    "figure). ratio = vhostlab's full-burst figure over DPDK's; raw_ratio the same on raw "
    "figures. Counts do not depend on load; which calls come up empty or partial does, "
    "and that is what the two corrections remove. Each cell's JSON keeps every count "
    "(detail).")


def merge(old: dict, rows: list[dict], negotiated: dict) -> tuple[list, dict, list]:
    """--merge: the cells of an earlier report with those just measured in their place,
    in the matrix's order; its negotiated features updated; its command, date and commit
    kept in the history (the new ones head the report)."""
    by_id = {c["cell"]: c for c in old["cells"]}
    by_id.update({r["cell"]: r for r in rows})
    cells = [by_id[c.id] for c in vs.ALL_CELLS if c.id in by_id]
    history = old.get("history", []) + [
        {k: old.get(k) for k in ("command", "date", "commit")}
        | {"cells": [c["cell"] for c in old["cells"]]}]
    return cells, {**old.get("negotiated", {}), **negotiated}, history


def git_commit() -> str:
    try:
        sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--",
                                "core", "cli"], capture_output=True, text=True).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def dpdk_version() -> str:
    proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "librte-vhost23"],
                          capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"


# --- command line ------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Count vhostlab's and DPDK's instructions per packet inside their burst "
        "calls (callgrind), under the same DPDK virtio-user front end, over the 32 cells; "
        "write vs-dpdk-instructions.json and .md.",
        epilog="Cells are named RING-mrgM-ordO-SIZE-DIR as in scripts/vs_dpdk.py, e.g. "
        "packed-mrg1-ord0-64-h2g. The 32 cells take about 25 minutes on a busy 2-CPU "
        "machine (testpmd starts slowly under valgrind). See reports/README.md.")
    p.add_argument("--cells", help="comma-separated cell names or shell patterns (default: "
                   "all 32)")
    p.add_argument("--quick", action="store_true",
                   help=f"cells {QUICK_CELLS} (unless --cells), 2 s loaded, 1 s idle (unless "
                   "given)")
    p.add_argument("--seconds", type=float, help="front-end traffic per loaded phase "
                   "(default 4)")
    p.add_argument("--idle-seconds", type=float, help="idle phase (default 2)")
    p.add_argument("--merge", action="store_true",
                   help="update only the cells run in the existing OUT/vs-dpdk-instructions"
                   ".json (the others kept), then write the md from all of them")
    p.add_argument("--out", type=Path, default=ROOT / "reports",
                   help="directory of vs-dpdk-instructions.json/.md (default reports/)")
    p.add_argument("--json", action="store_true",
                   help="also print the cells (without detail) as JSON on stdout")
    p.add_argument("--keep", action="store_true", help="keep the work directory (logs, "
                   "callgrind files) and name it")
    p.add_argument("--vhostlab", type=Path,
                   default=Path(os.environ.get("VHOSTLAB_FAST_BIN",
                                               ROOT / "build/release/cli/vhostlab-fast")),
                   help="vhostlab-fast, or a vhostlab with vhostlab-fast beside it (default "
                   "$VHOSTLAB_FAST_BIN or build/release/cli/vhostlab-fast)")
    a = p.parse_args(argv)
    a.seconds = a.seconds if a.seconds is not None else (2.0 if a.quick else 4.0)
    a.idle_seconds = a.idle_seconds if a.idle_seconds is not None else (
        1.0 if a.quick else 2.0)
    if not 0.5 <= a.seconds <= 60:
        p.error(f"--seconds {a.seconds}: must be in [0.5, 60]")
    if not 0.5 <= a.idle_seconds <= 60:
        p.error(f"--idle-seconds {a.idle_seconds}: must be in [0.5, 60]")
    pattern = a.cells or (QUICK_CELLS if a.quick else "*")
    pats = [s.strip() for s in pattern.split(",") if s.strip()]
    a.cell_list = [c for c in vs.ALL_CELLS if any(fnmatch.fnmatchcase(c.id, q) for q in pats)]
    if not a.cell_list:
        p.error(f"--cells {pattern!r} names no cell (e.g. split-mrg1-ord1-64-g2h; patterns "
                "like 'packed-*-64-*' work)")
    if not os.access(vs.serve_program(a.vhostlab), os.X_OK):
        p.error(f"--vhostlab {a.vhostlab}: no vhostlab-fast at {vs.serve_program(a.vhostlab)} "
                "(build the vhostlab-fast target, or set VHOSTLAB_FAST_BIN)")
    a.json_path = a.out / "vs-dpdk-instructions.json"
    if a.merge and not a.json_path.is_file():
        p.error(f"--merge: no {a.json_path} to update")
    vs.check_machine(p)
    for tool in ("valgrind", "callgrind_control", "callgrind_annotate"):
        if shutil.which(tool) is None:
            p.error(f"{tool} not found (apt-get install valgrind)")
    if not STDBUF_LIB.is_file():
        p.error(f"{STDBUF_LIB} not found (coreutils' stdbuf library)")
    return a


def main(argv=None) -> int:
    a = parse_args(argv)
    # Paths inside the repository are recorded relative to it, so the report names no
    # checkout-specific directory.
    words = argv if argv is not None else sys.argv[1:]
    cmdline = "scripts/vs_dpdk_instructions.py " + " ".join(
        w.removeprefix(f"{ROOT}/") for w in words)
    started = time.monotonic()
    commit = git_commit()  # what is measured: the tree as the run starts
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    log(f"vs-dpdk-instructions: {len(a.cell_list)} cells, {a.seconds:g} s loaded, "
        f"{a.idle_seconds:g} s idle per phase")
    try:
        runner = Runner(a)
    except vs.RunError as e:
        log(f"vs-dpdk-instructions: {e}")
        return 1
    rows, failed = [], []
    try:
        configs = sorted({c.config for c in a.cell_list},
                         key=lambda k: vs.ALL_CELLS.index(
                             next(c for c in vs.ALL_CELLS if c.config == k)))
        for cfg in configs:
            cells = [c for c in a.cell_list if c.config == cfg]
            el = time.monotonic() - started
            log(f"[{vs.cfg_name(cfg)}] {len(cells)} cells ({el:.0f} s so far)")
            try:
                dpdk = runner.dpdk_config(cfg, cells)
            except vs.RunError as e:
                log(f"  dpdk FAILED: {str(e).splitlines()[0]}")
                failed += [(c.id, "dpdk: " + str(e)) for c in cells]
                continue
            for cell in cells:
                try:
                    vhl = runner.vhostlab_cell(cell)
                    row = cell_row(cell, dpdk[cell.id], vhl)
                except (vs.RunError, figures.FigureError) as e:
                    log(f"  {cell.id} FAILED: {str(e).splitlines()[0]}")
                    failed.append((cell.id, str(e)))
                    continue
                rows.append(row)
                log(f"  {cell.id:26} vhostlab {row['vhostlab']:7.1f}  dpdk {row['dpdk']:7.1f}"
                    f"  ratio {row['ratio']:.2f}  (raw {row['raw_ratio']:.2f})")
    except KeyboardInterrupt:
        log("interrupted: no report written")
        return 1
    finally:
        runner.cleanup()
    duration = (time.monotonic() - started) / 60
    if a.merge:
        rows, negotiated, history = merge(json.loads(a.json_path.read_text()), rows,
                                          runner.negotiated)
    else:
        negotiated, history = runner.negotiated, []
    doc = {"commit": commit, "dpdk_version": dpdk_version(), "command": cmdline.strip(),
           "date": date, "duration_minutes": round(duration, 1),
           "seconds": a.seconds, "idle_seconds": a.idle_seconds, "burst": figures.BURST,
           "method": METHOD.format(fe=vs.FE_CPU, be=vs.BE_CPU, secs=a.seconds,
                                   idle=a.idle_seconds, drain=DRAIN_SECONDS),
           "negotiated": negotiated, "history": history,
           "failed": [{"cell": c, "error": e} for c, e in failed], "cells": rows}
    a.out.mkdir(parents=True, exist_ok=True)
    a.json_path.write_text(json.dumps(doc, indent=1) + "\n")
    (a.out / "vs-dpdk-instructions.md").write_text(render_md(doc))
    log(f"wrote {a.json_path} and vs-dpdk-instructions.md ({duration:.1f} min)")
    if a.json:
        print(json.dumps([{k: v for k, v in r.items() if k != "detail"} for r in rows],
                         indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
