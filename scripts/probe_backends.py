"""The vhost-user back ends `vhostlab probe` is run against, started and stopped in one place.

Used by scripts/conformance_report.py (`./lab conformance`) and by the harness cells
harness/test_probe_dpdk.py and harness/test_probe_ovs.py, so that the report and the tests
run each back end the same way. Each back end is a context manager: entering starts it
(and waits until the probe can reach it), leaving stops every process it started and
removes what it created (DPDK runtime directories, the OVS network namespace), also when
the body raised. A back end that cannot be started raises BackendError naming what is
missing or what its log says.

The back ends:
  * `vhostlab serve` (the production program, vhostlab-fast) in the modes the probe can
    judge: loopback (echoes: --expect echo), the same as a client (the probe runs with
    --server), rxonly, null, touch (they drop what they get: --expect sink) and txonly
    (drops what it gets and sends frames of its own: --expect source), and pair and tap
    with nothing on their far side (a second socket no guest connects to, a TAP device of
    serve's own that nothing reads: what the probe sends goes there, so --expect sink).
  * DPDK 22.11 dpdk-testpmd with one net_vhost port in io mode: the port is paired with
    itself, so it echoes.
  * Open vSwitch with DPDK (openvswitch-switch-dpdk): ovsdb-server and ovs-vswitchd-dpdk
    run by hand in a scratch directory and a network namespace, without hugepages
    (--legacy-mem is required, see lifecycle-recipes.md), one netdev bridge with a
    dpdkvhostuserclient port vhu0, and one OpenFlow flow `in_port=vhu0,actions=in_port`
    in place of the NORMAL flow, so the bridge echoes what the port sends. OVS connects as
    the client: the probe runs with --server. Default OVS configuration otherwise
    (userspace-tso-enable off, port MTU 1500): what a fresh install does.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

OVS_VSWITCHD = Path("/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk")
OVS_SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
SERVE_MODES = {"loopback": "echo", "rxonly": "sink", "null": "sink", "touch": "sink",
               "txonly": "source", "pair": "sink", "tap": "sink"}
# Every process a back end starts runs under `timeout -s KILL` as a last resort: a test or
# report that dies without its cleanup leaves nothing running for longer than this.
LAST_RESORT_S = 900


class BackendError(RuntimeError):
    """A back end could not be started (missing program, or it exited: the log's tail)."""


def _tail(path: Path, n: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return f"(no log at {path})"


def _package_version(pkg: str) -> str:
    out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True,
                         text=True, check=False)
    return out.stdout.strip() if out.returncode == 0 else "not installed"


def git_commit() -> str:
    """The checkout's commit (git describe: a hash, -dirty with uncommitted changes)."""
    out = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent.parent), "describe",
                          "--always", "--dirty", "--abbrev=12"], capture_output=True, text=True,
                         check=False)
    return out.stdout.strip() or "unknown"


def _stop_group(proc: subprocess.Popen | None) -> None:
    """SIGTERM the process group proc leads, SIGKILL it if it is still there after 10 s."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


def _wait_for(path: Path, proc: subprocess.Popen, log: Path, what: str, secs: float) -> None:
    deadline = time.monotonic() + secs
    while not path.exists():
        if proc.poll() is not None:
            raise BackendError(f"{what} exited with status {proc.returncode} before "
                               f"{path} appeared; its log ({log}):\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise BackendError(f"{what} made no {path} in {secs:.0f} s; its log ({log}):\n"
                               f"{_tail(log)}")
        time.sleep(0.05)


class Backend:
    """One back end. `probe_args()` are the options `vhostlab probe` needs against it
    (after --socket); `socket` is the path it serves on (or connects to)."""

    name = ""
    timeout_ms = 1000  # the probe's --timeout-ms against this back end

    socket_name = "be.sock"

    def __init__(self) -> None:
        # Made when the back end starts. Unix socket paths must stay short: a directory of
        # its own under /tmp, not under pytest's deep tmp_path.
        self.scratch = Path("/nonexistent")

    @property
    def socket(self) -> Path:
        return self.scratch / self.socket_name

    def probe_args(self) -> list[str]:
        return ["--timeout-ms", str(self.timeout_ms)]

    @property
    def log(self) -> Path:
        raise NotImplementedError

    def log_tail(self, n: int = 3000) -> str:
        """The end of the back end's log (for a failed test's message; gone after stop)."""
        return _tail(self.log, n)

    def version(self) -> str:
        raise NotImplementedError

    def warm_up(self, vhostlab: Path) -> None:
        """Whatever the back end needs before its first probe run (nothing, mostly)."""

    def setup(self) -> str:
        """How it runs, in a sentence or three for the report."""
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> "Backend":
        self.scratch = Path(tempfile.mkdtemp(prefix="vhl-be-"))
        try:
            self.start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.scratch, ignore_errors=True)


class ServeBackend(Backend):
    """`vhostlab-fast serve --mode MODE` (as a server, or with client=True as a client)."""

    def __init__(self, binary: Path, mode: str = "loopback", client: bool = False,
                 extra: tuple[str, ...] = ()) -> None:
        """extra: more serve options (e.g. `--threads 1`: the queue pair on a worker thread,
        every probe message reaching it through a pause)."""
        super().__init__()
        if mode not in SERVE_MODES:
            raise ValueError(f"serve mode {mode!r} is not one the probe judges "
                             f"({', '.join(SERVE_MODES)})")
        self.binary, self.mode, self.client = Path(binary), mode, client
        self.extra = tuple(extra)
        self.name = f"vhostlab-serve-{mode}" + ("-client" if client else "")
        self.proc: subprocess.Popen | None = None

    @property
    def log(self) -> Path:
        return self.scratch / "serve.log"

    def probe_args(self) -> list[str]:
        args = super().probe_args() + ["--expect", SERVE_MODES[self.mode]]
        return args + (["--server"] if self.client else [])

    def version(self) -> str:
        out = subprocess.run([str(self.binary), "--version"], capture_output=True, text=True,
                             check=False)
        ver = out.stdout.strip().splitlines()[0] if out.stdout.strip() else str(self.binary)
        return f"{ver}, commit {git_commit()}"

    def setup(self) -> str:
        role = ("as a client (`--client`; the probe listens with `--server`)" if self.client
                else "as a server")
        what = {"echo": "echoes every frame",
                "sink": "drops every frame (`--expect sink`: cases that need the echo are n/a)",
                "source": "drops every frame and sends 64-byte frames of its own (`--expect "
                          "source`: cases that need the echo are n/a)"}[SERVE_MODES[self.mode]]
        if self.mode == "pair":
            what = ("forwards every frame to a second socket no guest is connected to, so it "
                    "drops them (`--expect sink`: cases that need the echo are n/a)")
        elif self.mode == "tap":
            what = ("forwards every frame to a TAP device of its own that nothing reads "
                    "(`--expect sink`: cases that need the echo are n/a)")
        return (f"`{self.binary.name} serve --mode {self.mode}` {role}, the production "
                f"program; it {what}.")

    def start(self) -> None:
        if not (self.binary.is_file() and os.access(self.binary, os.X_OK)):
            raise BackendError(f"{self.binary} is not built (cmake --build build/release)")
        mode = self.mode
        if mode == "pair":
            mode = f"pair:{self.scratch / 'peer.sock'}"  # the second guest's socket, unused
        elif mode == "tap":
            mode = f"tap:vhlp{os.getpid() % 100000}x{id(self) % 100}"  # <= 15 characters
        argv = ["timeout", "-s", "KILL", str(LAST_RESORT_S), str(self.binary), "serve",
                "--socket", str(self.socket), "--mode", mode, "--quiet", *self.extra]
        if self.client:
            argv.append("--client")  # reconnects with back-off until the probe listens
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        if not self.client:
            _wait_for(self.socket, self.proc, self.log, "vhostlab serve", 10)

    def stop(self) -> None:
        _stop_group(self.proc)


class TestpmdBackend(Backend):
    """DPDK 22.11 dpdk-testpmd, one net_vhost port (server) in io mode: it echoes."""

    name = "dpdk-testpmd"
    # 2 s per wait: testpmd's lcores busy-poll one CPU shared with whatever else runs here.
    timeout_ms = 2000
    # testpmd's forwarding mode and what the probe then expects of the port (--expect).
    FORWARD = {"io": "echo", "macswap": "macswap", "txonly": "source"}

    def __init__(self, forward: str = "io") -> None:
        super().__init__()
        if forward not in self.FORWARD:
            raise ValueError(f"testpmd forward mode {forward!r} is not one the probe judges "
                             f"({', '.join(self.FORWARD)})")
        self.forward = forward
        if forward != "io":
            self.name = f"dpdk-testpmd-{forward}"
        self.prefix = f"vhlpd{os.getpid()}x{id(self) % 100000}"
        self.proc: subprocess.Popen | None = None

    @property
    def log(self) -> Path:
        return self.scratch / "testpmd.log"

    def setup(self) -> str:
        what = {"io": "one port in io mode is paired with itself, so it echoes",
                "macswap": "one port in macswap mode is paired with itself, so it sends every "
                           "frame back with its MAC addresses swapped (`--expect macswap`)",
                "txonly": "one port in txonly mode sends 64-byte frames of its own and never "
                          "reads the guest's TX ring (`--expect source`)"}[self.forward]
        if self.forward != "io":
            what += "; the traffic suite only (`--suite traffic`)"
        return ("`dpdk-testpmd --no-pci --no-huge -m 256 --vdev net_vhost0,iface=SOCKET,"
                f"queues=1 -- --forward-mode={self.forward}`: {what}; default devargs "
                "(tso=0).")

    def probe_args(self) -> list[str]:
        # io: every suite. macswap and txonly exist for what they do with frames: the
        # traffic suite (txonly never reads the guest's TX ring, so every case that waits
        # for a TX chain to be used would wedge on the forwarding mode, not on lib/vhost).
        suites = [] if self.forward == "io" else ["--suite", "traffic"]
        return super().probe_args() + ["--expect", self.FORWARD[self.forward], *suites]

    def version(self) -> str:
        return (f"DPDK {_package_version('dpdk-dev')} (dpdk-testpmd net_vhost, librte-vhost23 "
                f"{_package_version('librte-vhost23')})")

    def start(self) -> None:
        binary = shutil.which("dpdk-testpmd")
        if not binary:
            raise BackendError("dpdk-testpmd not found: ./lab installs dpdk-dev (DPDK 22.11)")
        argv = ["timeout", "-s", "KILL", str(LAST_RESORT_S), binary, "--no-pci", "--no-huge",
                "-m", "256", f"--file-prefix={self.prefix}", "--lcores", "0@1,1@1",
                "--vdev", f"net_vhost0,iface={self.socket},queues=1", "--",
                f"--forward-mode={self.forward}", "--total-num-mbufs=16384"]
        # Without -i testpmd forwards until stdin closes: a pipe held open keeps it running.
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        _wait_for(self.socket, self.proc, self.log, "dpdk-testpmd", 20)

    def stop(self) -> None:
        _stop_group(self.proc)
        for d in Path("/var/run/dpdk").glob(f"{self.prefix}*"):
            shutil.rmtree(d, ignore_errors=True)


class OvsBackend(Backend):
    """Open vSwitch with DPDK: a netdev bridge whose dpdkvhostuserclient port vhu0 connects
    to the probe (--server) and whose one flow sends every frame back out of vhu0."""

    name = "ovs-dpdk"
    # OVS applies a new connection and each vring state change on threads of its own (a
    # busy-polling PMD thread and the vhost-events thread) and reconnects once a second:
    # on a loaded machine 2 s per wait was not always enough for a new connection.
    timeout_ms = 3000

    socket_name = "vhu0.sock"

    def __init__(self, other_config: tuple[str, ...] = ()) -> None:
        super().__init__()
        # Extra Open_vSwitch other_config settings, "key=value" (the report uses none).
        self.other_config = other_config
        tag = f"{os.getpid()}x{id(self) % 100000}"
        self.netns = f"vhl-ovs-{tag}"
        self.prefix = f"vhlovs{tag}"
        self.procs: list[subprocess.Popen] = []
        self.made_netns = False

    @property
    def env(self) -> dict[str, str]:
        d = str(self.scratch)  # every pid file, log and socket of OVS goes there
        return dict(os.environ, OVS_RUNDIR=d, OVS_LOGDIR=d, OVS_DBDIR=d)

    @property
    def db(self) -> Path:
        return self.scratch / "db.sock"

    def probe_args(self) -> list[str]:
        return super().probe_args() + ["--expect", "echo", "--server"]

    def setup(self) -> str:
        return ("ovsdb-server and ovs-vswitchd-dpdk (no hugepages: `--no-huge -m 512 "
                "--legacy-mem`) in a network namespace; bridge br0 (`datapath_type=netdev`) "
                "with one `dpdkvhostuserclient` port vhu0 that connects to the probe "
                "(`--server`), and one OpenFlow flow `in_port=vhu0,actions=in_port` instead "
                "of NORMAL, so it echoes. Default configuration otherwise: "
                "`userspace-tso-enable` off, MTU 1500. Before the run one echo case is "
                "repeated until it passes: OVS builds the port's mempool on the first "
                "connection and does not poll the port until then.")

    def version(self) -> str:
        out = subprocess.run([str(OVS_VSWITCHD), "--version"], capture_output=True, text=True,
                             check=False)
        # "ovs-vswitchd-dpdk (Open vSwitch) 3.1.0" then "DPDK 22.11.11".
        words = " ".join(out.stdout.split())
        m = re.search(r"\(Open vSwitch\) (\S+) DPDK (\S+)", words)
        ver = f"Open vSwitch {m.group(1)} with DPDK {m.group(2)}" if m else words
        return f"{ver} (openvswitch-switch-dpdk {_package_version('openvswitch-switch-dpdk')})"

    def _run(self, *argv: str) -> str:
        out = subprocess.run(list(argv), env=self.env, capture_output=True, text=True,
                             timeout=60, check=False)
        if out.returncode != 0:
            raise BackendError(f"{' '.join(argv)} exited {out.returncode}: "
                               f"{out.stderr.strip()}\n{_tail(self.scratch / 'ovs-vswitchd.log')}")
        return out.stdout

    def _vsctl(self, *args: str) -> str:
        return self._run("ovs-vsctl", f"--db=unix:{self.db}", "--timeout=30", *args)

    def _spawn(self, name: str, *argv: str) -> subprocess.Popen:
        with open(self.scratch / f"{name}.out", "w") as log:
            proc = subprocess.Popen(
                ["ip", "netns", "exec", self.netns, "timeout", "-s", "KILL",
                 str(LAST_RESORT_S), *argv],
                env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        self.procs.append(proc)
        return proc

    def start(self) -> None:
        for prog in ("ovsdb-tool", "ovsdb-server", "ovs-vsctl", "ovs-ofctl"):
            if not shutil.which(prog):
                raise BackendError(f"{prog} not found: ./lab installs openvswitch-switch-dpdk")
        if not OVS_VSWITCHD.is_file():
            raise BackendError(f"{OVS_VSWITCHD} not found: ./lab installs "
                               "openvswitch-switch-dpdk")
        # The bridge's own port is a kernel tap device: it lives in a namespace made here.
        self._run("ip", "netns", "add", self.netns)
        self.made_netns = True
        d = self.scratch
        self._run("ovsdb-tool", "create", str(d / "conf.db"), str(OVS_SCHEMA))
        db = self._spawn("ovsdb-server", "ovsdb-server", str(d / "conf.db"),
                         f"--remote=punix:{self.db}", f"--unixctl={d / 'ovsdb.ctl'}",
                         f"--log-file={d / 'ovsdb-server.log'}")
        _wait_for(self.db, db, d / "ovsdb-server.out", "ovsdb-server", 20)
        self._vsctl("--no-wait", "init")
        # Without hugepages: --legacy-mem, or OVS adds --in-memory and DPDK refuses both.
        # One lcore and one PMD thread, both on CPU 1.
        self._vsctl("--no-wait", "set", "Open_vSwitch", ".", "other_config:dpdk-init=true",
                    f"other_config:dpdk-extra=--no-huge -m 512 --legacy-mem --no-pci "
                    f"--file-prefix={self.prefix}",
                    "other_config:dpdk-lcore-mask=0x2", "other_config:pmd-cpu-mask=0x2",
                    *(f"other_config:{kv}" for kv in self.other_config))
        vswitchd = self._spawn("ovs-vswitchd", str(OVS_VSWITCHD), f"unix:{self.db}",
                               f"--unixctl={d / 'vswitchd.ctl'}",
                               f"--log-file={d / 'ovs-vswitchd.log'}")
        _wait_for(d / "vswitchd.ctl", vswitchd, d / "ovs-vswitchd.log", "ovs-vswitchd-dpdk", 60)
        self._vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev")
        self._vsctl("add-port", "br0", "vhu0", "--", "set", "Interface", "vhu0",
                    "type=dpdkvhostuserclient", f"options:vhost-server-path={self.socket}")
        mgmt = f"unix:{d / 'br0.mgmt'}"
        # Only the echo: no NORMAL flow, so nothing the bridge learns or floods reaches vhu0.
        self._run("ovs-ofctl", "del-flows", mgmt)
        self._run("ovs-ofctl", "add-flow", mgmt, "priority=100,in_port=vhu0,actions=in_port")

    def warm_up(self, vhostlab: Path) -> None:
        """Run the probe's echo case until it passes once (at most 60 s). OVS creates the
        port's mempool on the first connection, a reconfiguration on its main thread that
        took 4 s here without hugepages; until it is done the port is not polled, and the
        first cases wedged. The mempool stays for later connections."""
        deadline = time.monotonic() + 60
        last = ""
        while time.monotonic() < deadline:
            out = subprocess.run(
                [str(vhostlab), "probe", "--socket", str(self.socket), "--case", "echo",
                 "--ring", "split", *self.probe_args()],
                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                check=False)
            if out.returncode == 0:
                return
            last = out.stdout[-1500:] + out.stderr[-1500:]
        raise BackendError(f"OVS never echoed a frame in 60 s; the probe said:\n{last}\n"
                           f"ovs-vswitchd.log:\n{self.log_tail()}")

    def stop(self) -> None:
        try:
            for proc in reversed(self.procs):
                _stop_group(proc)
        finally:
            if self.made_netns:
                subprocess.run(["ip", "netns", "delete", self.netns], capture_output=True,
                               check=False)
            for d in Path("/var/run/dpdk").glob(f"{self.prefix}*"):
                shutil.rmtree(d, ignore_errors=True)

    @property
    def log(self) -> Path:
        return self.scratch / "ovs-vswitchd.log"


def run_probe(vhostlab: Path, backend: Backend, *args: str,
              timeout: float = 300) -> tuple[subprocess.CompletedProcess, float]:
    """`vhostlab probe --json --socket SOCKET <the back end's options> ARGS`, and how many
    seconds it took. The caller judges the result (exit status, the one JSON document)."""
    t0 = time.monotonic()
    out = subprocess.run(
        [str(vhostlab), "probe", "--json", "--socket", str(backend.socket),
         *backend.probe_args(), *args],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
        timeout=timeout, check=False)
    return out, time.monotonic() - t0


def all_backends(fast_bin: Path) -> list[Backend]:
    """Every back end the conformance report covers, in its order (not started)."""
    serve = [ServeBackend(fast_bin, m) for m in SERVE_MODES]
    serve.insert(1, ServeBackend(fast_bin, "loopback", client=True))
    return serve + [TestpmdBackend(), TestpmdBackend("macswap"), TestpmdBackend("txonly"),
                    OvsBackend()]
