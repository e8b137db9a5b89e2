"""The VPC testbed of FORNAX: servers whose SmartNICs are P4 switches (p4sim or BMv2, one
process each, started as the fabric's switches are: :class:`testbed.net.SwitchDaemon`),
VMs as Mininet hosts (network namespaces) on the NICs' VM ports, and the NICs' uplinks
cabled to each other (the underlay).

It is described by plain records (:class:`VpcNetSpec`: NICs, VMs, uplink cables) and knows
nothing of the policy or the manager. Everything it creates is recorded in the testbed's
state file (``build/testbed-state.json``), so ``make stop`` removes exactly that; every
switch serves P4Runtime over TLS with client authentication from a throw-away split PKI
(:func:`create_vpc_pki`): each NIC's manager has a certificate of its own
(:func:`manager_identity`, ``nicA-manager``) from a CA only its NIC trusts, and each p4sim
NIC a policy of its own (:func:`nic_policy_path`) under which only *its* manager programs
it and the operator (``controller``) only reads it — NIC A's manager cannot program, read
or stream from NIC B (fornax/README.md, "Security"; tests/fornax/test_fornax_authz.py).

Example::

    >>> spec = VpcNetSpec(nics=[NicSpec("fxA", 11, "127.0.0.1:50711", (1, 2))],
    ...                   vms=[VmSpec("a1", "fxA", 2, "10.0.0.1/24", "02:00:00:00:01:01")])
    >>> spec.interface("fxA", 2)
    'fxA-eth2'
    >>> net = VpcNet(spec, NetOptions(target="p4sim", pki_dir=Path("build/pki")))  # doctest: +SKIP
    >>> net.start(); net.vm("a1").cmd("ping -c1 10.0.0.2"); net.stop()             # doctest: +SKIP
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from testbed.net import (NetOptions, ProcRecord, SwitchDaemon, TestbedError, TestbedState,
                         configure_root_intf, guard_root_namespace, leftovers, link_exists,
                         load_mininet, make_switch_class, netns_inode, proc_cmdline, switch_launch, teardown,
                         wait_tcp)
from testbed.giantguard import guard_against_giants
from testbed.pki import FabricPki
from testbed.targets import check_binary, TargetError
from testbed.tls import CONTROLLER

OPERATOR_ROLE = "operator"
"""The read-only P4Runtime role the operator's ``controller`` certificate holds on a NIC."""


def manager_identity(nic: str) -> str:
    """The certificate common name of NIC ``nic``'s manager (control CA).

    >>> manager_identity("nicA")
    'nicA-manager'
    """
    return f"{nic}-manager"


def nic_policy_path(pki_dir: Path, nic: str) -> Path:
    """Where :func:`create_vpc_pki` writes NIC ``nic``'s ``--p4rt-policy`` file.

    >>> nic_policy_path(Path("build/pki"), "nicA").name
    'p4rt-policy-nicA.yaml'
    """
    return Path(pki_dir) / f"p4rt-policy-{nic}.yaml"


def nic_policy_text(nic: str) -> str:
    """NIC ``nic``'s P4Runtime policy (p4sim's ``--p4rt-policy`` format): its own manager
    holds the default role (writes, pipeline, packet I/O, digests); the operator's
    ``controller`` certificate reads only; every other identity — another NIC's manager
    included — holds no role, so each of its RPCs is PERMISSION_DENIED.

    >>> [line.strip() for line in nic_policy_text("nicA").splitlines()[-2:]]
    ['nicA-manager: [""]', 'controller: [operator]']
    """
    return f"""\
# P4Runtime authorization of SmartNIC {nic} (p4sim switch --p4rt-policy FILE; format:
# p4sim/README.md). Identities are common names of certificates the control CA signed.
version: 1
roles:
  "":                      # the default role: full access, for {nic}'s own manager only
    can_push_pipeline: true
    receives_packet_ins: true
  {OPERATOR_ROLE}:                # Read and GetForwardingPipelineConfig only
    read_only: true
identities:
  {manager_identity(nic)}: [""]
  {CONTROLLER}: [{OPERATOR_ROLE}]
"""


def create_vpc_pki(pki_dir: Path, nics: Sequence[str]) -> FabricPki:
    """The VPC testbed's PKI under ``pki_dir`` (replacing any; the folder 0700): the split
    layout with a switch certificate per NIC (the switches' CA) and the operator's
    ``controller`` (the control CA); per NIC a CA of its own (``ca-manager-NIC.pem``)
    that signs only that NIC's manager (:func:`manager_identity`); each NIC trusts, as
    P4Runtime clients, the control CA (the operator) and its own manager's CA — so another
    NIC's manager fails the handshake, on BMv2 as on p4sim — and each p4sim NIC gets its
    policy (:func:`nic_policy_text` at :func:`nic_policy_path`: the operator reads only,
    and a manager not its own holds no role, should a CA be shared by mistake). A NIC's
    own certificate fails the handshake as a client too (the switches' CA is no client CA)."""
    pki = FabricPki.create_split(Path(pki_dir), {**{n: "switch" for n in nics},
                                                 CONTROLLER: "controller"})
    Path(pki_dir).chmod(0o700)
    control = pki.ca_cert("control")
    for nic in nics:
        own = pki.add_ca(f"astral-p4 {nic} manager CA", f"manager-{nic}",
                         [manager_identity(nic)], trusts=[pki.ca_cert("switches")])
        (pki.root / f"{nic}.trust.pem").write_bytes(control.read_bytes() + own.read_bytes())
        nic_policy_path(pki_dir, nic).write_text(nic_policy_text(nic), encoding="utf-8")
    return pki


@dataclass(frozen=True, slots=True)
class NicSpec:
    """A SmartNIC: its switch name, P4Runtime device id and address, its ports."""

    name: str
    device_id: int
    grpc_addr: str
    ports: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class VmSpec:
    """A VM: its name (the namespace's), the NIC and port it is cabled to, its address
    with prefix length, its MAC."""

    name: str
    nic: str
    port: int
    address: str
    mac: str


@dataclass(slots=True)
class VpcNetSpec:
    """NICs, VMs and the uplink cables ((nic, port, nic, port))."""

    nics: list[NicSpec]
    vms: list[VmSpec]
    cables: list[tuple[str, int, str, int]] = field(default_factory=list)

    def interface(self, nic: str, port: int) -> str:
        """The switch-side interface of a NIC port (root namespace)."""
        return f"{nic}-eth{port}"


def vm_commands(vm: VmSpec) -> list[str]:
    """Shell commands (inside the VM's namespace) that configure its interface: IPv6 and
    offloads off (the switch forwards what the kernel checksummed), the address with its
    connected route.

    >>> vm_commands(VmSpec("a1", "fxA", 2, "10.0.0.1/24", "02:00:00:00:01:01"))[-1]
    'ip link set a1-eth0 up'
    """
    dev = f"{vm.name}-eth0"
    return ["sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1",
            "ip link set lo up", f"sysctl -qw net.ipv6.conf.{dev}.disable_ipv6=1",
            f"ethtool -K {dev} tx off rx off sg off tso off gso off >/dev/null 2>&1 || true",
            f"ip addr flush dev {dev}", f"ip addr add {vm.address} dev {dev}",
            f"ip link set {dev} up"]


class VpcNet:
    """A :class:`VpcNetSpec` running in Mininet, recorded as it is built."""

    def __init__(self, spec: VpcNetSpec, options: NetOptions) -> None:
        self.spec = spec
        self.opts = options
        self.mininet = load_mininet()
        self.net: Any = None
        self.daemons: dict[str, SwitchDaemon] = {}
        self.pki: Optional[FabricPki] = None
        self.state = TestbedState(target=options.target, owner_pid=os.getpid(),
                                  started_at=time.time())
        self.stopped: set[str] = set()

    def save_state(self) -> None:
        self.state.save(self.opts.state_path)

    def _extra(self, nic: str) -> list[str]:
        """NIC ``nic``'s extra switch flags: ``switch_extra``, and for p4sim with TLS its
        own ``--p4rt-policy`` (:func:`nic_policy_path`: its manager programs, the operator
        reads, nobody else)."""
        extra = list(self.opts.switch_extra)
        if self.opts.target == "p4sim" and self.opts.pki_dir is not None \
                and "--p4rt-policy" not in extra:
            extra += ["--p4rt-policy", str(nic_policy_path(self.opts.pki_dir, nic))]
        return extra

    def build(self) -> None:
        """Create the VMs, switches (not started) and cables; record each."""
        from mininet.link import Link  # noqa: PLC0415 - heavy: mininet (loads lazily)
        from mininet.net import Mininet  # noqa: PLC0415 - heavy: mininet
        from mininet.node import Host  # noqa: PLC0415 - heavy: mininet

        try:
            self.opts.binary = check_binary(self.opts.target, self.opts.binary)
        except TargetError as exc:
            raise TestbedError(str(exc)) from None
        taken = [self.spec.interface(n.name, p) for n in self.spec.nics for p in n.ports
                 if link_exists(self.spec.interface(n.name, p))]
        if taken:
            raise TestbedError(f"interfaces {', '.join(taken[:4])} already exist "
                               "(another testbed still up? `make stop`)")
        self.net = net = Mininet(topo=None, controller=None, host=Host, link=Link,
                                 build=False, autoSetMacs=False, waitConnected=False)
        if self.opts.pki_dir is not None:
            # the split PKI: a NIC's certificate is refused as a P4Runtime client (only
            # the control CA's are trusted by the switches), and each p4sim NIC's
            # --p4rt-policy lets only its own manager program it
            self.pki = create_vpc_pki(self.opts.pki_dir, [n.name for n in self.spec.nics])
            self.state.pki = str(self.opts.pki_dir)
        self.save_state()
        switch_cls = make_switch_class(self.mininet)
        for vm in self.spec.vms:
            host = net.addHost(vm.name, ip=None)
            self.state.procs.append(ProcRecord(vm.name, int(host.pid), proc_cmdline(host.pid) or "",
                                               "host-shell", netns_inode(host.pid)))
        for nic in self.spec.nics:
            launch = switch_launch(self.opts.target, name=nic.name, device_id=nic.device_id,
                                   grpc_addr=nic.grpc_addr, ports=nic.ports,
                                   log_dir=self.opts.log_dir, pcap_dir=self.opts.pcap_dir,
                                   log_level=self.opts.log_level, binary=self.opts.binary,
                                   thrift_port=9090 + nic.device_id
                                   if self.opts.target == "bmv2" else None,
                                   extra=self._extra(nic.name),
                                   tls=self.pki.files(nic.name) if self.pki else None)
            daemon = SwitchDaemon.of(launch)
            self.daemons[nic.name] = daemon
            node = net.addSwitch(nic.name, cls=switch_cls, daemon=daemon,
                                 dpid=f"{nic.device_id:x}")
            self.state.procs.append(ProcRecord(nic.name, int(node.pid),
                                               proc_cmdline(node.pid) or "", "switch-shell"))
            self.state.switches[nic.name] = {"grpc_addr": nic.grpc_addr,
                                             "device_id": nic.device_id, "role": "smartnic",
                                             "out": str(daemon.out_path),
                                             "target": self.opts.target}
        self.save_state()
        for vm in self.spec.vms:
            self._link(vm.name, 0, f"{vm.name}-eth0", vm.mac, vm.nic, vm.port, host_side=True)
        for a, pa, b, pb in self.spec.cables:
            self._link(a, pa, self.spec.interface(a, pa), None, b, pb, host_side=False)
        for name in self.state.interfaces:
            configure_root_intf(name)
            subprocess.run(["ethtool", "-K", name, "tso", "off", "gso", "off", "gro", "off"],
                           capture_output=True, check=False)
        if self.opts.target == "bmv2":      # a VM's giants never reach BMv2 (testbed.giantguard)
            guard_against_giants([self.spec.interface(vm.nic, vm.port) for vm in self.spec.vms])
        guard_root_namespace(self.state, self.opts.state_path)
        for vm in self.spec.vms:
            host = net[vm.name]
            for cmd in vm_commands(vm):
                out = host.cmd(f"{cmd}; echo rc=$?").strip()
                if not out.endswith("rc=0"):
                    raise TestbedError(f"{vm.name}: '{cmd}' failed: {out}")
        net.build()

    def _link(self, node1: str, port1: int, intf1: str, mac1: Optional[str], sw: str,
              port2: int, host_side: bool) -> None:
        intf2 = self.spec.interface(sw, port2)
        params: dict[str, Any] = {"port1": port1, "port2": port2, "intfName1": intf1,
                                  "intfName2": intf2}
        if mac1:
            params["addr1"] = mac1
        self.net.addLink(node1, sw, **params)
        if host_side:
            self.state.host_interfaces.append(intf1)
        else:
            self.state.interfaces.append(intf1)
        self.state.interfaces.append(intf2)
        self.save_state()

    def start(self) -> None:
        """Build if needed, start every switch process, wait until each serves P4Runtime."""
        if self.net is None:
            self.build()
        self.opts.log_dir.mkdir(parents=True, exist_ok=True)
        if self.opts.pcap_dir is not None:
            self.opts.pcap_dir.mkdir(parents=True, exist_ok=True)
        self.net.start()
        for name, d in self.daemons.items():
            assert d.pid is not None
            self.state.procs.append(ProcRecord(name, d.pid, " ".join(d.cmd), "switch"))
        self.save_state()
        deadline = time.monotonic() + self.opts.ready_timeout_s
        for d in self.daemons.values():
            d.wait_ready(deadline)

    def record_process(self, name: str, pid: int, kind: str = "manager") -> None:
        """Record a process started for this testbed (a manager), so that teardown and
        ``make stop`` end it by its PID."""
        self.state.procs.append(ProcRecord(name, pid, proc_cmdline(pid) or "", kind))
        self.save_state()

    def vm(self, name: str) -> Any:
        """The Mininet host of VM ``name``."""
        return self.net[name]

    def pid(self, nic: str) -> int:
        """The PID of NIC ``nic``'s switch process."""
        d = self.daemons[nic]
        if d.pid is None or not d.alive():
            raise TestbedError(f"switch {nic} is not running")
        return d.pid

    def freeze(self, nic: str) -> float:
        """SIGSTOP NIC ``nic``'s switch (a hung hardware path); the wall time it froze."""
        os.kill(self.pid(nic), signal.SIGSTOP)
        self.stopped.add(nic)
        return time.time()

    def thaw(self, nic: str) -> float:
        """SIGCONT it; the wall time. Waits (bounded) until its gRPC port answers."""
        os.kill(self.pid(nic), signal.SIGCONT)
        self.stopped.discard(nic)
        t = time.time()
        d = self.daemons[nic]
        if not wait_tcp(d.grpc_addr, time.monotonic() + 30, d.alive):
            raise TestbedError("switch not back after a freeze: " + d.crash_report())
        return t

    def crashed(self) -> list[str]:
        """Crash reports of switch processes no longer running."""
        return [d.crash_report() for d in self.daemons.values() if d.pid and not d.alive()]

    def stop(self) -> list[str]:
        """Thaw what is frozen, stop Mininet, the switches and every recorded process, and
        remove what is left; one line per action."""
        for nic in list(self.stopped):
            try:
                os.kill(self.pid(nic), signal.SIGCONT)
            except (TestbedError, ProcessLookupError):
                pass
        self.stopped.clear()
        if self.net is not None:
            from mininet.log import setLogLevel  # noqa: PLC0415 - heavy: mininet
            setLogLevel("warning")
            try:
                self.net.stop()
            except Exception as exc:  # noqa: BLE001 — teardown below still runs
                print(f"vpcnet: mininet stop: {exc}", flush=True)
        for d in self.daemons.values():
            d.stop()
        done = teardown(self.state)
        left = leftovers(self.state)
        if any(left.values()):
            done.append(f"could not remove {left}; state kept in {self.opts.state_path}")
        else:
            self.opts.state_path.unlink(missing_ok=True)
        return done


__all__ = ["NicSpec", "OPERATOR_ROLE", "VmSpec", "VpcNet", "VpcNetSpec", "create_vpc_pki",
           "manager_identity", "nic_policy_path", "nic_policy_text", "vm_commands"]
