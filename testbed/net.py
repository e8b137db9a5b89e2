"""Mininet pieces of the testbed: switch processes, host namespaces, links, teardown.

The fabric (``topo.model.Fabric``) becomes a Mininet network with ``controller=None``:

* every switch is a Mininet ``Switch`` in the root namespace whose data plane is a real
  process — ``python -m p4sim switch`` (target ``p4sim``) or ``simple_switch_grpc``
  (target ``bmv2``) — started with BMv2's command-line shape, built in one place
  (:class:`testbed.targets.SwitchLaunch`): ``-i N@<sw>-eth<N>``, ``--device-id``,
  ``--log-level``, ``--pcap=pcaps``, then after ``--`` the target options
  ``--grpc-server-addr``, ``--cpu-port 255``, ``--priority-queues 8``. BMv2 logs to the
  console into ``logs/<sw>.log`` and serves its Thrift runtime on 9090 + device id; p4sim
  writes ``logs/<sw>.log`` and ``logs/<sw>-p4runtime-requests.txt``. Readiness is probed on
  the gRPC port (and BMv2's Thrift port; bounded); stop is by PID (SIGTERM, then SIGKILL).
* every server is a Mininet host (its own network namespace) with one interface per
  rail, ``<host>-eth<rail>``, IPv6 off and checksum offloads off (:func:`configure_host`);
  a dual-port NIC (``ports_per_nic: 2``) has a second, ``<host>-eth<rail>p1``, cabled to
  the other leaf of its rail's pair, with the same address and MAC (:func:`host_commands`).
* **Routing on a host** (one rule, per rail): NIC r gets ``10.b.r.(s+1)/24`` *without* the
  connected-subnet route (``noprefixroute``), a link route to its gateway
  ``10.b.r.254``, and one route ``10.B.r.0/24 via 10.b.r.254 dev <host>-eth<r>`` for
  every rail-r subnet of the fabric, its own block's included. So traffic to a rail-r
  address always leaves on the rail-r NIC and every packet, even to a neighbour on the
  same leaf, is routed by the leaf (the fabric is pure L3; hosts only ever ARP for their
  gateway, which the leaf answers in the data plane). There is no default route.

Everything created is recorded in :class:`TestbedState` (``build/testbed-state.json``):
switch PIDs with their command lines, the PIDs and network-namespace inodes of the host
and switch shells, and the root-namespace interfaces. :func:`teardown` removes exactly
those — never ``mn -c``, never a kill by process name.

Example::

    >>> cmd = switch_command("p4sim", name="b0r0l0", device_id=1,            # doctest: +SKIP
    ...                      grpc_addr="127.0.0.1:50001", ports=[1, 2, 3])
    >>> state = TestbedState.load(Path("build/testbed-state.json"))          # doctest: +SKIP
    >>> teardown(state)                                                       # doctest: +SKIP
"""
from __future__ import annotations

import importlib.util
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

from process import proc_cmdline
from testbed.errors import TestbedError
from testbed.faultundo import undo_recorded
from testbed.giantguard import guard_against_giants
from testbed.ports import claim_switch_ports, free_port, port_free
from testbed.rootguard import (RootGuardError, guard_interfaces, remove_table, table_exists,
                               table_name)
from testbed.targets import (THRIFT_BASE_PORT, SwitchLaunch, TargetError, check_binary,
                             exit_report)
from testbed.tls import create_fabric_pki, make_host_views, policy_path

if TYPE_CHECKING:
    from testbed.pki import TlsFiles

REPO = Path(__file__).resolve().parents[1]
READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 10.0
#: p4sim's PFC watchdog on every testbed switch: the times of SONiC's ``pfcwd start_default``
#: — detection 200 ms, restoration 200 ms (sonic-utilities ``pfcwd/main.py``
#: ``DEFAULT_DETECTION_TIME`` / ``DEFAULT_RESTORATION_TIME``) — but action ``forward``, not
#: its ``drop``: ``fabric.p4`` counts a packet in its PFC occupancy and shared buffer in
#: ingress and takes it off in egress (``p4src/include/control/admission.p4``), so a packet
#: the traffic manager discards would leave its count behind (the leak the queue limit
#: closed); SONiC's ``drop`` also drops at the ingress priority group, before any count.
PFC_WATCHDOG = "200:200:forward"
DEBIAN_DIST_PACKAGES = Path("/usr/lib/python3/dist-packages")
APT_PACKAGES = ("mininet", "iputils-ping", "bridge-utils", "ethtool", "tcpdump", "gcc")
"""What the testbed needs; gcc builds p4sim's native path (p4sim/README.md, "The native path";
without it the switches run on the Python engine, said once)."""
APT_COMMAND = "apt-get update -q && apt-get install -y " + " ".join(APT_PACKAGES)
MONITOR_PACKAGES = {"prometheus": "prometheus", "chromium": "chromium",
                    "chromium-driver": "chromedriver", "nftables": "nft"}
"""Debian packages monitoring uses when present (package -> command): a real Prometheus
(else the monitor's embedded store), Chromium for the web view's browser test, nftables
for the fault injector's gray links (the kernel has no netem). ``testbed deps`` installs
them; nothing refuses to run without them."""
P4SIM_READY_PREFIX = "p4sim switch ready: grpc "
P4SIM_CONTROL_PREFIX = "p4sim switch control: "


# ---------------------------------------------------------------------------- mininet
def load_mininet() -> ModuleType:
    """The ``mininet`` package, from the venv or else from Debian's dist-packages.

    Debian installs Mininet for /usr/bin/python3 only; a venv does not see it. Only the
    ``mininet`` package itself is loaded from there (nothing else of dist-packages).
    Raises :class:`TestbedError` with the install command when it is missing.

    >>> load_mininet().__name__                                             # doctest: +SKIP
    'mininet'
    """
    if "mininet" in sys.modules:
        return sys.modules["mininet"]
    if importlib.util.find_spec("mininet") is None:
        init = DEBIAN_DIST_PACKAGES / "mininet" / "__init__.py"
        if not init.exists():
            raise TestbedError(f"Mininet is not installed; as root run: {APT_COMMAND}")
        spec = importlib.util.spec_from_file_location(
            "mininet", init, submodule_search_locations=[str(init.parent)])
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["mininet"] = module
        spec.loader.exec_module(module)
    import mininet  # noqa: PLC0415 — heavy: mininet
    return mininet


def missing_tools() -> list[str]:
    """Debian packages the testbed needs that are not installed (by their commands)."""
    probes = {"mininet": "mnexec", "iputils-ping": "ping", "ethtool": "ethtool",
              "tcpdump": "tcpdump", "bridge-utils": "brctl", "gcc": "gcc"}
    return [pkg for pkg, tool in probes.items()
            if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists()]


def missing_monitor_tools() -> list[str]:
    """The :data:`MONITOR_PACKAGES` not installed (by their commands)."""
    return [pkg for pkg, tool in MONITOR_PACKAGES.items()
            if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists()
            and not Path("/usr/bin", tool).exists()]


# ------------------------------------------------------------------- switch processes
def switch_command(target: str, *, name: str, device_id: int, grpc_addr: str,
                   ports: Iterable[int], log_dir: Path = REPO / "logs",
                   pcap_dir: Optional[Path] = REPO / "pcaps", log_level: str = "info",
                   binary: Optional[str] = None, thrift_port: Optional[int] = None,
                   extra: Sequence[str] = ()) -> list[str]:
    """The command line of switch ``name`` for ``target`` ``"p4sim"`` or ``"bmv2"``, its
    ports named ``<name>-eth<N>`` (:meth:`testbed.targets.SwitchLaunch.command`; ``extra``
    are p4sim-only flags).

    >>> switch_command("p4sim", name="s0", device_id=201, grpc_addr="127.0.0.1:50201",
    ...                ports=[1], log_dir=Path("logs"), pcap_dir=Path("pcaps"))[-7:]
    ['--', '--grpc-server-addr', '127.0.0.1:50201', '--cpu-port', '255', '--priority-queues', '8']
    """
    return switch_launch(target, name=name, device_id=device_id, grpc_addr=grpc_addr,
                         ports=ports, log_dir=log_dir, pcap_dir=pcap_dir, log_level=log_level,
                         binary=binary, thrift_port=thrift_port, extra=extra).command()


def switch_launch(target: str, *, name: str, device_id: int, grpc_addr: str,
                  ports: Iterable[int], log_dir: Path = REPO / "logs",
                  pcap_dir: Optional[Path] = REPO / "pcaps", log_level: str = "info",
                  binary: Optional[str] = None, thrift_port: Optional[int] = None,
                  extra: Sequence[str] = (), tls: Optional["TlsFiles"] = None) -> SwitchLaunch:
    """The :class:`~testbed.targets.SwitchLaunch` of a testbed switch (ports
    ``<name>-eth<N>``; ``tls``: its PKI files, P4Runtime over TLS); TestbedError for an
    unknown target."""
    try:
        return SwitchLaunch(target, name, device_id=device_id, grpc_addr=grpc_addr,
                            interfaces={p: f"{name}-eth{p}" for p in ports}, log_dir=log_dir,
                            pcap_dir=pcap_dir, log_level=log_level, binary=binary,
                            thrift_port=thrift_port, p4sim_flags=tuple(extra), tls=tls)
    except TargetError as exc:
        raise TestbedError(str(exc)) from None


def wait_tcp(addr: str, deadline: float, alive: Any = None) -> bool:
    """True once ``HOST:PORT`` accepts a TCP connection before ``deadline`` (monotonic).

    ``alive`` is an optional callable; when it returns False the wait ends early (False).
    """
    host, port = addr.rsplit(":", 1)
    host = "127.0.0.1" if host in ("0.0.0.0", "", "[::]") else host
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            return False
        try:
            with socket.create_connection((host, int(port)), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a text file ('' when it does not exist)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class SwitchDaemon:
    """One switch process: started in the root namespace, probed, stopped by its PID.

    Built from a :class:`~testbed.targets.SwitchLaunch` (:meth:`of`): stdout and stderr go
    to its ``stdout_path`` (``logs/<name>.out`` for p4sim; BMv2 logs to the console, so
    there it is the log ``logs/<name>.log`` itself).

    >>> d = SwitchDaemon.of(switch_launch("p4sim", name="s0", device_id=1,   # doctest: +SKIP
    ...                     grpc_addr="127.0.0.1:9760", ports=[1]))
    >>> d.start(); d.wait_ready(time.monotonic() + 60); d.stop()           # doctest: +SKIP
    """

    def __init__(self, name: str, cmd: list[str], grpc_addr: str, log_dir: Path, *,
                 out_path: Optional[Path] = None, thrift_port: Optional[int] = None) -> None:
        self.name = name
        self.cmd = cmd
        self.grpc_addr = grpc_addr
        self.out_path = out_path or log_dir / f"{name}.out"
        self.log_path = log_dir / f"{name}.log"
        self.thrift_port = thrift_port
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.control_addr = ""
        self._out_start = 0  # offset of this run's output in out_path

    @classmethod
    def of(cls, launch: SwitchLaunch) -> "SwitchDaemon":
        """The daemon of ``launch`` (its command, stdout file and, on BMv2, Thrift port)."""
        cmd = launch.command()
        thrift = None
        if launch.target == "bmv2":
            thrift = int(cmd[cmd.index("--thrift-port") + 1])
        return cls(launch.name, cmd, launch.grpc_addr, launch.log_dir,
                   out_path=launch.stdout_path, thrift_port=thrift)

    @property
    def pid(self) -> Optional[int]:
        """PID of the running process (None before :meth:`start`)."""
        return self.proc.pid if self.proc is not None else None

    def start(self, append: bool = False) -> None:
        """Spawn the process (returns at once; see :meth:`wait_ready`); ``append`` keeps the
        previous run's output (a restart)."""
        self.out_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.out_path, "ab" if append else "wb") as out:
            self._out_start = out.tell()
            self.proc = subprocess.Popen(self.cmd, cwd=REPO, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)

    def alive(self) -> bool:
        """True while the process runs."""
        return self.proc is not None and self.proc.poll() is None

    def crash_report(self) -> str:
        """Why the switch is not usable: one line when it exited (its command line, exit
        status and last log line), else its state and the tail of its logs."""
        if self.proc is not None and not self.alive():
            return exit_report(self.name, self.cmd, self.proc.returncode, self.out_path)
        logs = f"{self.out_path}:\n{tail(self.out_path)}"
        if self.log_path != self.out_path:
            logs += f"\n{self.log_path} (tail):\n{tail(self.log_path, 10)}"
        return f"switch {self.name} (running, not answering): {' '.join(self.cmd)}; {logs}"

    def wait_ready(self, deadline: float) -> None:
        """Return once the gRPC port accepts connections and, for p4sim, the switch has
        printed its ready line (a port answered by some other program is not this switch),
        for BMv2 once its Thrift port answers too; TestbedError otherwise."""
        if not wait_tcp(self.grpc_addr, deadline, self.alive):
            raise TestbedError(self.crash_report())
        if "p4sim" in self.cmd and not self._wait_line(P4SIM_READY_PREFIX, deadline):
            raise TestbedError(self.crash_report())
        if self.thrift_port is not None:
            if not wait_tcp(f"127.0.0.1:{self.thrift_port}", deadline, self.alive):
                raise TestbedError(self.crash_report())
            # BMv2 goes on without its Thrift runtime when the port is taken (it logs
            # "Could not bind"): then what answers the port is another program
            taken = [l for l in self._run_output().splitlines() if "Could not bind" in l]
            if taken:
                raise TestbedError(f"switch {self.name}: its Thrift port {self.thrift_port} "
                                   f"is in use by another program ({taken[-1].strip()}): "
                                   f"{' '.join(self.cmd)}")
        for line in self._run_output().splitlines():
            if line.startswith(P4SIM_CONTROL_PREFIX):
                self.control_addr = line[len(P4SIM_CONTROL_PREFIX):].strip()

    def _run_output(self) -> str:
        """What the current run has printed so far (a restart appends to the file)."""
        try:
            with open(self.out_path, "rb") as f:
                f.seek(self._out_start)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def _wait_line(self, prefix: str, deadline: float) -> bool:
        """True once a line of this run's output starts with ``prefix``; False when the
        process ends or ``deadline`` (monotonic) passes first."""
        while True:
            if any(line.startswith(prefix) for line in self._run_output().splitlines()):
                return True
            if not self.alive() or time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> Optional[int]:
        """SIGTERM, wait at most ``timeout_s``, then SIGKILL; the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode


def make_switch_class(mininet: ModuleType) -> type:
    """The Mininet ``Switch`` subclass that runs a :class:`SwitchDaemon` (root namespace).

    Built at run time because Mininet is imported lazily (see :func:`load_mininet`).
    Construct with ``net.addSwitch(name, cls=cls, daemon=SwitchDaemon(...))``.
    """
    from mininet.node import Switch  # noqa: PLC0415 — heavy: mininet

    class P4Switch(Switch):  # type: ignore[misc, valid-type]
        """A P4 switch (p4sim or BMv2) whose process is owned by its :class:`SwitchDaemon`."""

        def __init__(self, name: str, daemon: SwitchDaemon, **params: Any) -> None:
            params.setdefault("inNamespace", False)
            super().__init__(name, **params)
            self.daemon = daemon

        def start(self, controllers: Any) -> None:  # noqa: ARG002 (controller=None)
            self.daemon.start()

        def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 (Mininet's name)
            self.daemon.stop()
            super().stop(deleteIntfs)

    del mininet
    return P4Switch


# ------------------------------------------------------------------------------ hosts
BACKUP_PORT_METRIC = 100
"""Route metric of a dual-port NIC's second port: the kernel's own traffic (ping, TCP) leaves
on port 0 and takes port 1 only when routed there (a mark rule: testbed/README.md) or when
port 0's routes are gone; the NIC emulator picks the port of each QP itself (raw sockets)."""


def host_commands(nics: Sequence[Any], rail_subnets: dict[int, list[str]]) -> list[str]:
    """Shell commands (run inside the host's namespace) that configure its rail NICs.

    ``nics`` are ``topo.model.NicInfo`` records; ``rail_subnets[r]`` lists every rail-r
    subnet of the fabric (``"10.1.0.0/24"``). See the module docstring for the rule. A
    dual-port NIC (``nic.ports`` of two) gets the same address on both port interfaces
    (bonded ports: one address, one MAC), the routes of port 1 with metric
    :data:`BACKUP_PORT_METRIC`, and loose reverse-path filtering on both (a reply may come
    back on the other port).

    >>> from types import SimpleNamespace as N
    >>> nic = N(rail=0, ip="10.0.0.1", prefix_len=24, gateway_ip="10.0.0.254",
    ...         intf="b0s0-eth0", mac="00:00:0a:00:00:01")
    >>> host_commands([nic], {0: ["10.0.0.0/24", "10.1.0.0/24"]})[-1]
    'ip route replace 10.1.0.0/24 via 10.0.0.254 dev b0s0-eth0'
    >>> nic.ports = [N(intf="b0s0-eth0"), N(intf="b0s0-eth0p1")]
    >>> host_commands([nic], {0: ["10.1.0.0/24"]})[-1]
    'ip route replace 10.1.0.0/24 via 10.0.0.254 dev b0s0-eth0p1 metric 100'
    """
    cmds = ["sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1",
            "ip link set lo up"]
    for nic in nics:
        ports = getattr(nic, "ports", None) or [nic]
        for i, port in enumerate(ports):
            dev = port.intf
            metric = f" metric {BACKUP_PORT_METRIC}" if i else ""
            cmds += [f"sysctl -qw net/ipv6/conf/{dev}/disable_ipv6=1",
                     f"ethtool -K {dev} tx off rx off sg off >/dev/null 2>&1 || true",
                     f"ip addr flush dev {dev}",
                     f"ip addr add {nic.ip}/{nic.prefix_len} dev {dev} noprefixroute",
                     f"ip link set {dev} up"]
            if len(ports) > 1:
                cmds.append(f"sysctl -qw net/ipv4/conf/{dev}/rp_filter=2")
            cmds.append(f"ip route replace {nic.gateway_ip}/32 dev {dev} scope link{metric}")
            cmds += [f"ip route replace {net} via {nic.gateway_ip} dev {dev}{metric}"
                     for net in rail_subnets.get(nic.rail, [])]
    return cmds


def rail_subnets(fabric: Any) -> dict[int, list[str]]:
    """rail → sorted list of the subnets of that rail's NICs, over the whole fabric."""
    out: dict[int, set[str]] = {}
    for host in fabric.hosts:
        for nic in host.nics:
            net = ipaddress.ip_interface(f"{nic.ip}/{nic.prefix_len}").network
            out.setdefault(nic.rail, set()).add(str(net))
    return {r: sorted(nets, key=lambda n: ipaddress.ip_network(n)) for r, nets in out.items()}


def configure_host(host: Any, nics: Sequence[Any], subnets: dict[int, list[str]]) -> None:
    """Apply :func:`host_commands` in a Mininet host; TestbedError if one fails."""
    for cmd in host_commands(nics, subnets):
        out = host.cmd(f"{cmd}; echo rc=$?").strip()
        if not out.endswith("rc=0"):
            raise TestbedError(f"{host.name}: '{cmd}' failed: {out}")


def host_link_ports(fabric: Any) -> list[str]:
    """The switch side of every host link (``<switch>-eth<port>``, root namespace): where
    BMv2's giant guard goes (:mod:`testbed.giantguard`).

    >>> from topo.model import build_fabric
    >>> host_link_ports(build_fabric())[:2]
    ['b0r0l0-eth1', 'b0r0l0-eth2']
    """
    return [f"{sw.name}-eth{p}" for sw in fabric.switches
            for p, info in sorted(sw.ports.items()) if info.kind == "host"]


def configure_root_intf(name: str) -> None:
    """IPv6 and offloads off on a switch-side interface (root namespace)."""
    subprocess.run(["sysctl", "-qw", f"net/ipv6/conf/{name}/disable_ipv6=1"],
                   capture_output=True, check=False)
    if shutil.which("ethtool"):
        subprocess.run(["ethtool", "-K", name, "tx", "off", "rx", "off", "sg", "off"],
                       capture_output=True, check=False)


# ------------------------------------------------------------------------------ state
@dataclass(slots=True)
class ProcRecord:
    """A process the testbed started: name, PID, the start of its command line.

    >>> ProcRecord("s0", 1234, "python -m p4sim switch", "switch").kind
    'switch'
    """
    name: str
    pid: int
    cmdline: str
    kind: str  # "switch" | "host-shell" | "switch-shell"
    netns: int = 0  # inode of /proc/PID/ns/net when it has its own namespace, else 0


@dataclass(slots=True)
class TestbedState:
    """What one ``testbed up`` created, saved as JSON so that ``make stop`` can undo it.

    >>> s = TestbedState(target="p4sim"); s.interfaces.append("s0-eth1")
    >>> TestbedState.from_json(s.to_json()).interfaces
    ['s0-eth1']
    """
    __test__ = False

    target: str = "p4sim"
    owner_pid: int = 0
    started_at: float = 0.0
    procs: list[ProcRecord] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)  # root-namespace names
    host_interfaces: list[str] = field(default_factory=list)  # inside host namespaces
    switches: dict[str, dict[str, Any]] = field(default_factory=dict)  # name → grpc, logs…
    #: the testbed PKI's directory (``build/pki``: testbed.tls); "" when plaintext (--insecure)
    pki: str = ""
    #: the nft table keeping hosts out of the root namespace (testbed.rootguard); "" none
    guard_table: str = ""

    def to_json(self) -> str:
        """The state as indented JSON."""
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "TestbedState":
        """Parse :meth:`to_json` output."""
        raw = json.loads(text)
        raw["procs"] = [ProcRecord(**p) for p in raw.get("procs", [])]
        return cls(**raw)

    def save(self, path: Path) -> None:
        """Write atomically to ``path``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(self.to_json())
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> Optional["TestbedState"]:
        """The saved state, or None when there is no file."""
        try:
            return cls.from_json(path.read_text())
        except FileNotFoundError:
            return None


def netns_inode(pid: int) -> int:
    """Inode of the network namespace of ``pid`` (0 if unknown)."""
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return 0


def record_matches(rec: ProcRecord) -> bool:
    """True when ``rec.pid`` is still the process we started (same command line)."""
    cmd = proc_cmdline(rec.pid)
    return cmd is not None and cmd.startswith(rec.cmdline[:200]) and bool(cmd)


def pids_in_netns(inode: int) -> list[int]:
    """Every PID whose network namespace is ``inode`` (never the root namespace's)."""
    if inode == 0 or inode == netns_inode(1):
        return []
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and netns_inode(int(entry.name)) == inode:
            found.append(int(entry.name))
    return found


def link_exists(name: str) -> bool:
    """True when a root-namespace interface ``name`` exists."""
    return Path("/sys/class/net", name).exists()


def leftovers(state: TestbedState) -> dict[str, list[str]]:
    """What of ``state`` still exists: live processes, namespaces, interfaces, nft tables.

    >>> leftovers(TestbedState())
    {'processes': [], 'namespaces': [], 'interfaces': [], 'tables': []}
    """
    procs = [f"{r.name}:{r.pid}" for r in state.procs if record_matches(r)]
    nss = [f"{r.name}:{r.netns}" for r in state.procs if r.netns and pids_in_netns(r.netns)]
    intfs = [i for i in state.interfaces if link_exists(i)]
    tables = [state.guard_table] if state.guard_table and table_exists(state.guard_table) else []
    return {"processes": procs, "namespaces": nss, "interfaces": intfs, "tables": tables}


def _kill(pid: int, sig: int, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_gone(pids: Iterable[int], timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    left = list(pids)
    while left and time.monotonic() < deadline:
        left = [p for p in left if Path(f"/proc/{p}").exists() and not _zombie(p)]
        if left:
            time.sleep(0.05)
    return left


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def teardown(state: TestbedState, timeout_s: float = STOP_TIMEOUT_S) -> list[str]:
    """Remove what ``state`` recorded; returns one line per action taken.

    Switch processes get SIGTERM then SIGKILL (only when their command line still
    matches), every process inside a recorded host namespace is killed (by the namespace's
    inode, never by name), the shells go, then the recorded interfaces are deleted.
    """
    done: list[str] = []
    live = [r for r in state.procs if r.kind == "switch" and record_matches(r)]
    for rec in live:
        _kill(rec.pid, signal.SIGTERM, group=False)
    for pid in _wait_gone([r.pid for r in live], timeout_s):
        _kill(pid, signal.SIGKILL, group=False)
    done += [f"stopped switch {r.name} (pid {r.pid})" for r in live]
    for rec in state.procs:
        if rec.kind == "switch":
            continue
        victims = pids_in_netns(rec.netns) if rec.netns else []
        if record_matches(rec):
            victims.append(rec.pid)
        for pid in set(victims):
            _kill(pid, signal.SIGKILL, group=False)
        if victims:
            _wait_gone(victims, 5)
            done.append(f"stopped {rec.kind} {rec.name} ({len(set(victims))} process(es))")
    for name in state.interfaces:
        if link_exists(name):
            subprocess.run(["ip", "link", "del", name], capture_output=True, check=False)
            done.append(f"deleted interface {name}")
    return done + remove_table(state.guard_table)


def guard_root_namespace(state: TestbedState, state_path: Path) -> None:
    """Close the root namespace to the hosts on every recorded root-side interface
    (:mod:`testbed.rootguard`): the table's name is recorded (and saved) before it is
    loaded, so a crash leaves nothing ``make stop`` cannot remove. What could not be done
    is said on stderr."""
    state.guard_table = table_name(state.owner_pid)
    state.save(state_path)
    try:
        problems = guard_interfaces(state.guard_table, state.interfaces)
    except RootGuardError as exc:
        raise TestbedError(str(exc)) from None
    for problem in problems:
        print(f"testbed: root namespace guard: {problem}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- network
@dataclass(slots=True)
class NetOptions:
    """How :class:`FabricNet` runs the fabric.

    ``target`` p4sim|bmv2; ``binary`` the simple_switch_grpc path (bmv2); ``tc_links``
    shapes every link to its ``gbps`` with TCLink (no netem here: bandwidth only);
    ``log_level`` of the switches' packet trace (``trace`` for the full per-packet log);
    ``pki_dir``: make the testbed PKI there at build and start every switch with P4Runtime
    over TLS and client authentication (:mod:`testbed.tls`); None: plaintext.
    ``pcap_dir``: where the switches write their per-port captures (None: none);
    ``pcap_switches``: the switches that capture (None: every one; testbed/README.md,
    "Captures").
    """
    target: str = "p4sim"
    binary: Optional[str] = None
    log_dir: Path = REPO / "logs"
    pcap_dir: Optional[Path] = REPO / "pcaps"
    pcap_switches: Optional[frozenset[str]] = None
    log_level: str = "info"
    tc_links: bool = False
    state_path: Path = REPO / "build" / "testbed-state.json"
    ready_timeout_s: float = READY_TIMEOUT_S
    switch_extra: tuple[str, ...] = ()
    pki_dir: Optional[Path] = None

    def pcap_dir_of(self, switch: str) -> Optional[Path]:
        """Where ``switch`` writes its captures (None: it writes none).

        >>> o = NetOptions(pcap_dir=Path("/p"), pcap_switches=frozenset({"s0"}))
        >>> o.pcap_dir_of("s0"), o.pcap_dir_of("b0r0l0"), NetOptions(pcap_dir=None).pcap_dir_of("s0")
        (PosixPath('/p'), None, None)
        >>> NetOptions(pcap_dir=Path("/p")).pcap_dir_of("b0r0l0")
        PosixPath('/p')
        """
        if self.pcap_switches is not None and switch not in self.pcap_switches:
            return None
        return self.pcap_dir


class FabricNet:
    """A ``topo.model.Fabric`` as a running Mininet network, recorded as it is built.

    >>> fnet = FabricNet(fabric, NetOptions(target="p4sim"))               # doctest: +SKIP
    >>> fnet.start()   # hosts, links, switches, all gRPC ports ready      # doctest: +SKIP
    >>> fnet.host("b0s1").cmd("ping -c1 10.1.0.2")                         # doctest: +SKIP
    >>> fnet.stop()    # everything it made, by PID and recorded name      # doctest: +SKIP
    """

    def __init__(self, fabric: Any, options: NetOptions) -> None:
        self.fabric = fabric
        self.opts = options
        self.mininet = load_mininet()
        self.net: Any = None
        self.daemons: dict[str, SwitchDaemon] = {}
        #: switches moved off a busy default port (testbed.ports.claim_switch_ports)
        self.port_notices: list[str] = []
        self.state = TestbedState(target=options.target, owner_pid=os.getpid(),
                                  started_at=time.time())

    def save_state(self) -> None:
        """Write the record of everything this testbed created (build/testbed-state.json)."""
        self.state.save(self.opts.state_path)

    def _record_node(self, node: Any, kind: str) -> None:
        own_ns = kind == "host-shell"
        self.state.procs.append(ProcRecord(
            node.name, int(node.pid), proc_cmdline(node.pid) or "", kind,
            netns_inode(node.pid) if own_ns else 0))

    def build(self) -> None:
        """Create hosts, switches (not yet started) and links; record each as it appears."""
        from mininet.link import Link, TCLink  # noqa: PLC0415 — heavy: mininet
        from mininet.net import Mininet  # noqa: PLC0415 — heavy: mininet
        from mininet.node import Host  # noqa: PLC0415 — heavy: mininet

        try:
            self.opts.binary = check_binary(self.opts.target, self.opts.binary)
        except TargetError as exc:
            raise TestbedError(str(exc)) from None
        taken = [f"{sw.name}-eth{p}" for sw in self.fabric.switches for p in sw.ports
                 if link_exists(f"{sw.name}-eth{p}")]
        if taken:
            raise TestbedError(f"interfaces {', '.join(taken[:4])} already exist (another "
                               "testbed still up? `make stop`)")
        try:
            self.port_notices = claim_switch_ports(self.fabric)
        except OSError as exc:
            raise TestbedError(str(exc)) from None
        for notice in self.port_notices:
            print(f"testbed: {notice}", file=sys.stderr, flush=True)
        thrift_in_use: set[int] = set()
        switch_cls = make_switch_class(self.mininet)
        self.net = net = Mininet(topo=None, controller=None, host=Host, link=Link,
                                 build=False, autoSetMacs=False, waitConnected=False)
        pki = None
        if self.opts.pki_dir is not None:
            pki = create_fabric_pki(self.fabric, self.opts.pki_dir)
            self.state.pki = str(self.opts.pki_dir)
        self.save_state()
        views: dict[str, Path] = {}
        if pki is not None:
            views = make_host_views(pki, [h.name for h in self.fabric.hosts])
        for info in self.fabric.hosts:
            # each host sees only its own key at build/pki (its own mount namespace)
            private = [(str(self.opts.pki_dir), str(views[info.name]))] if info.name in views else []
            host = net.addHost(info.name, ip=None, privateDirs=private)
            self._record_node(host, "host-shell")
            host.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 "
                     "net.ipv6.conf.default.disable_ipv6=1")
        for sw in self.fabric.switches:
            launch = switch_launch(self.opts.target, name=sw.name, device_id=sw.device_id,
                                   grpc_addr=sw.grpc_addr, ports=sw.ports.keys(),
                                   log_dir=self.opts.log_dir, pcap_dir=self.opts.pcap_dir_of(sw.name),
                                   log_level=self.opts.log_level, binary=self.opts.binary,
                                   thrift_port=self._thrift_port(sw.device_id, thrift_in_use),
                                   extra=self._extra(with_policy=pki is not None),
                                   tls=pki.files(sw.name) if pki is not None else None)
            daemon = SwitchDaemon.of(launch)
            self.daemons[sw.name] = daemon
            node = net.addSwitch(sw.name, cls=switch_cls, daemon=daemon,
                                 dpid=f"{sw.device_id:x}")
            self._record_node(node, "switch-shell")
            self.state.switches[sw.name] = {
                "grpc_addr": sw.grpc_addr, "device_id": sw.device_id, "role": sw.role,
                "log": str(self.opts.log_dir / f"{sw.name}.log"),
                "out": str(daemon.out_path), "target": self.opts.target}
            if daemon.thrift_port is not None:
                self.state.switches[sw.name]["thrift_port"] = daemon.thrift_port
        self.save_state()
        nics = {(p.leaf, p.leaf_port): (h, nic, p) for h in self.fabric.hosts
                for nic in h.nics for p in (getattr(nic, "ports", None) or [nic])}
        for sw in self.fabric.switches:
            for port, pinfo in sorted(sw.ports.items()):
                if pinfo.kind == "host":
                    hinfo, nic, nport = nics[(sw.name, port)]
                    # the host's Mininet port number: the rail, + 256 per further NIC port
                    self._add_link(hinfo.name, nic.rail + 256 * getattr(nport, "port", 0),
                                   nport.intf, nic.mac, sw.name, port, pinfo.gbps, TCLink)
                elif pinfo.kind == "uplink":
                    self._add_link(pinfo.peer_node, pinfo.peer_port,
                                   f"{pinfo.peer_node}-eth{pinfo.peer_port}", None,
                                   sw.name, port, pinfo.gbps, TCLink)
        subnets = rail_subnets(self.fabric)
        for info in self.fabric.hosts:
            configure_host(net[info.name], info.nics, subnets)
        for name in self.state.interfaces:
            configure_root_intf(name)
        if self.opts.target == "bmv2":      # p4sim drops giants at its ports (rx_oversize)
            guard_against_giants(host_link_ports(self.fabric))
        guard_root_namespace(self.state, self.opts.state_path)
        net.build()

    def _extra(self, with_policy: bool = False) -> list[str]:
        """Extra switch flags: ``switch_extra``, and for p4sim ``--pfc-passthrough`` — its
        MAC honours a received PAUSE *and* hands it to the P4 program, whose
        ``FabricIngress.pfc.rx_frames`` counts it (BMv2 has no MAC PFC: there the program
        always sees them), so GOR's pause-storm alarm reads the same counter on both — and,
        ``with_policy`` (TLS on), ``--p4rt-policy`` with the PKI's policy file: only the
        controller programs a p4sim switch, the monitor reads (:mod:`testbed.tls`). p4sim
        also runs its PFC watchdog (``--pfc-watchdog`` :data:`PFC_WATCHDOG`, unless
        ``switch_extra`` gives one): a queue a host keeps paused stops holding its leaf."""
        extra = list(self.opts.switch_extra)
        if self.opts.target == "p4sim" and "--pfc-passthrough" not in extra:
            extra.append("--pfc-passthrough")
        if self.opts.target == "p4sim" and "--pfc-watchdog" not in extra:
            extra += ["--pfc-watchdog", PFC_WATCHDOG]
        if with_policy and self.opts.target == "p4sim" and self.opts.pki_dir is not None \
                and "--p4rt-policy" not in extra:
            extra += ["--p4rt-policy", str(policy_path(self.opts.pki_dir))]
        return extra

    def _thrift_port(self, device_id: int, in_use: set[int]) -> Optional[int]:
        """BMv2's thrift port: 9090 + device id, or a free port when that one is busy."""
        if self.opts.target != "bmv2":
            return None
        port = THRIFT_BASE_PORT + device_id
        if port in in_use or not port_free("127.0.0.1", port):
            port = free_port(avoid=in_use)
            print(f"testbed: thrift port {THRIFT_BASE_PORT + device_id} is in use; using {port}",
                  file=sys.stderr, flush=True)
        in_use.add(port)
        return port

    def _add_link(self, node1: str, port1: int, intf1: str, mac1: Optional[str],
                  sw: str, port2: int, gbps: float, tclink: type) -> None:
        intf2 = f"{sw}-eth{port2}"
        params: dict[str, Any] = {"port1": port1, "port2": port2,
                                  "intfName1": intf1, "intfName2": intf2}
        if mac1:
            params["addr1"] = mac1
        if self.opts.tc_links and gbps:
            params.update(cls=tclink, bw=float(gbps) * 1000.0)
        self.net.addLink(node1, sw, **params)
        for name, node in ((intf1, node1), (intf2, sw)):
            if self.net[node] not in self.net.hosts:
                self.state.interfaces.append(name)
            else:
                self.state.host_interfaces.append(name)
        self.save_state()

    def start(self) -> None:
        """Build if needed, start every switch process, wait until all gRPC ports listen."""
        if self.net is None:
            self.build()
        self.opts.log_dir.mkdir(parents=True, exist_ok=True)
        if self.opts.pcap_dir is not None:
            self.opts.pcap_dir.mkdir(parents=True, exist_ok=True)
        self.net.start()
        for name, daemon in self.daemons.items():
            assert daemon.pid is not None
            self.state.procs.append(ProcRecord(name, daemon.pid, " ".join(daemon.cmd),
                                               "switch"))
        self.save_state()
        deadline = time.monotonic() + self.opts.ready_timeout_s
        for daemon in self.daemons.values():
            daemon.wait_ready(deadline)
            if daemon.control_addr:
                self.state.switches[daemon.name]["control_addr"] = daemon.control_addr
        self.save_state()

    def restart_switch(self, name: str) -> int:
        """Stop switch ``name``'s process (SIGTERM, then SIGKILL) and start it again with the
        same command (same ports, device id, gRPC address, flags): it comes back empty, as
        after a crash. The recorded PID in the state file is replaced at once (``make stop``
        tears down exactly what exists), then the call waits until the new process's gRPC
        port listens and records its control address; returns the new PID.

        >>> fnet.restart_switch("b0r0l0")                 # doctest: +SKIP
        48211
        """
        daemon = self.daemons[name]
        old = daemon.pid
        daemon.stop()
        self.state.procs = [r for r in self.state.procs
                            if not (r.kind == "switch" and r.name == name and r.pid == old)]
        daemon.start(append=True)
        assert daemon.pid is not None
        self.state.procs.append(ProcRecord(name, daemon.pid, " ".join(daemon.cmd), "switch"))
        self.save_state()
        daemon.wait_ready(time.monotonic() + self.opts.ready_timeout_s)
        if daemon.control_addr:
            self.state.switches[name]["control_addr"] = daemon.control_addr
        self.save_state()
        return daemon.pid

    def hang_switch(self, name: str, hang_s: float) -> int:
        """Freeze switch ``name``'s process (SIGSTOP to its recorded PID) for ``hang_s``
        seconds, then let it go on (SIGCONT): a switch that stops answering and comes back
        with all its state. Returns once it accepts connections again; its PID.

        >>> fnet.hang_switch("b0r0l0", 3.0)               # doctest: +SKIP
        48211
        """
        daemon = self.daemons[name]
        if daemon.pid is None or not daemon.alive():
            raise TestbedError(f"switch {name} is not running")
        os.kill(daemon.pid, signal.SIGSTOP)
        try:
            threading.Event().wait(hang_s)             # the scenario's timeline: frozen
        finally:
            os.kill(daemon.pid, signal.SIGCONT)
        if not wait_tcp(daemon.grpc_addr, time.monotonic() + self.opts.ready_timeout_s, daemon.alive):
            raise TestbedError("switch not back after a hang: " + daemon.crash_report())
        return daemon.pid

    def host(self, name: str) -> Any:
        """The Mininet host ``name``."""
        return self.net[name]

    def crashed(self) -> list[str]:
        """Crash reports of switch processes that are no longer running."""
        return [d.crash_report() for d in self.daemons.values() if d.pid and not d.alive()]

    def stop(self) -> list[str]:
        """Undo recorded faults (a frozen switch, nft tables), stop switches and Mininet,
        then remove anything recorded that is still left."""
        undone = undo_recorded(self.opts.state_path)
        if self.net is not None:
            from mininet.log import setLogLevel  # noqa: PLC0415 — heavy: mininet
            setLogLevel("warning")
            try:
                self.net.stop()
            except Exception as exc:  # noqa: BLE001 — teardown below still runs
                print(f"testbed: mininet stop: {exc}", file=sys.stderr)
        for daemon in self.daemons.values():
            daemon.stop()
        done = undone + teardown(self.state)
        left = leftovers(self.state)
        if any(left.values()):
            done.append(f"could not remove {left}; state kept in {self.opts.state_path}")
        else:
            self.opts.state_path.unlink(missing_ok=True)
        return done
