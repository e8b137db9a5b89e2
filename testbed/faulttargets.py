"""What a fault's target names on the running testbed: the component names of
``topo.components.component`` (``link b0r0l0->s0``, ``cable b0r0l0<->s0``, ``switch s1``,
``route s0 10.1.0.0/24``, ``nic b1s0-eth0``, ``port b0r0l0:3``, ``agent b0s0``,
``controller``) resolved against the fabric (``topo``) and the testbed state (host shells,
switch and NIC processes). A name that does not exist is refused with what exists.

>>> parse_target("link b0r0l0:3->s0")
('link', ('b0r0l0:3->s0',))
>>> parse_target("route s0 10.1.0.0/24"), parse_target("controller")
(('route', ('s0', '10.1.0.0/24')), ('controller', ()))
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from topo.components import LinkDir
from testbed.faultnet import Endpoint

WORDS = ("link", "cable", "switch", "route", "nic", "port", "agent", "controller")
SHOWN = 12


class TargetError(ValueError):
    """A target that is malformed or does not exist; the message lists what exists."""


def parse_target(text: str) -> tuple[str, tuple[str, ...]]:
    """``"WORD PART..."`` → (word, parts); TargetError for an unknown word."""
    words = text.split()
    if not words or words[0] not in WORDS:
        raise TargetError(f"target {text!r}: want one of {', '.join(WORDS)} followed by its "
                          "name (e.g. 'link b0r0l0->s0', 'switch s1', 'nic b1s0-eth0')")
    return words[0], tuple(words[1:])


def listing(names: Sequence[str]) -> str:
    """At most :data:`SHOWN` names, then how many more.

    >>> listing(list("abcdefghijklmn"))
    'a, b, c, d, e, f, g, h, i, j, k, l and 2 more'
    """
    names = sorted(names)
    head = ", ".join(names[:SHOWN])
    return head + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "") or "none"


@dataclass(frozen=True, slots=True)
class Direction:
    """One link direction of the fabric and the interface that sends it (``host``: the
    host whose namespace holds it; None: a switch port in the root namespace)."""

    src: str
    src_port: Optional[int]
    dst: str
    iface: str
    host: Optional[str] = None

    def __str__(self) -> str:
        return str(LinkDir(self.src, self.dst, self.src_port))


class FabricNames:
    """The fabric's names as the injector resolves them, with the testbed state's PIDs.

    ``fabric`` is a ``topo.Fabric`` (or any object with its ``switches``/``hosts`` shape),
    ``state`` a ``testbed.net.TestbedState`` (read each time: NIC processes come and go).
    """

    def __init__(self, fabric: Any, state: Any) -> None:
        self.fabric, self.state = fabric, state
        self.switches = {sw.name: sw for sw in fabric.switches}
        self.hosts = {h.name: h for h in fabric.hosts}
        # every NIC port (a dual-port NIC's second one is <host>-eth<r>p1 on its other leaf)
        ports = [(h.name, p) for h in fabric.hosts for nic in h.nics
                 for p in (getattr(nic, "ports", None) or [nic])]
        self.nic_host = {p.intf: host for host, p in ports}
        self.directions: list[Direction] = []
        nic_at = {(p.leaf, p.leaf_port): (host, p) for host, p in ports}
        for sw in fabric.switches:
            for port, info in sorted(sw.ports.items()):
                iface = f"{sw.name}-eth{port}"
                if info.kind == "host" and (sw.name, port) in nic_at:
                    host, nic = nic_at[(sw.name, port)]
                    self.directions.append(Direction(sw.name, port, nic.intf, iface))
                    self.directions.append(Direction(nic.intf, None, sw.name, nic.intf, host))
                else:
                    self.directions.append(Direction(sw.name, port, info.peer_node, iface))

    # ------------------------------------------------------------------ processes
    def procs(self, kind: str) -> list[Any]:
        """The state's process records of ``kind``."""
        return [r for r in self.state.procs if r.kind == kind]

    def endpoint(self, d: Direction) -> Endpoint:
        """The sending interface of ``d`` with its namespace (the host shell's)."""
        if d.host is None:
            return Endpoint(d.iface)
        shells = [r for r in self.procs("host-shell") if r.name == d.host]
        if not shells:
            raise TargetError(f"host {d.host} has no shell in the testbed state (is the "
                              "testbed up?)")
        return Endpoint(d.iface, shells[-1].pid, shells[-1].netns)

    def switch_proc(self, name: str) -> Any:
        """The process record of switch ``name`` (the latest: a restart replaces it)."""
        self.switch(name)
        recs = [r for r in self.procs("switch") if r.name == name]
        if not recs:
            raise TargetError(f"switch {name} has no process in the testbed state (is the "
                              "testbed up?)")
        return recs[-1]

    # ------------------------------------------------------------------ names
    def switch(self, name: str) -> Any:
        """The switch record; TargetError listing the switches."""
        if name not in self.switches:
            raise TargetError(f"no switch {name!r} (switches: {listing(list(self.switches))})")
        return self.switches[name]

    def host(self, name: str) -> Any:
        """The host record; TargetError listing the hosts."""
        if name not in self.hosts:
            raise TargetError(f"no host {name!r} (hosts: {listing(list(self.hosts))})")
        return self.hosts[name]

    def nic(self, name: str) -> str:
        """The host of NIC ``name``; TargetError listing the NICs."""
        if name not in self.nic_host:
            raise TargetError(f"no NIC {name!r} (NICs: {listing(list(self.nic_host))})")
        return self.nic_host[name]

    def direction(self, text: str) -> Direction:
        """The one direction ``SRC->DST`` / ``SRC:PORT->DST`` names."""
        try:
            want = LinkDir.parse(text)
        except ValueError as exc:
            raise TargetError(str(exc)) from None
        found = [d for d in self.directions if d.src == want.src and d.dst == want.dst
                 and (want.src_port is None or d.src_port == want.src_port)]
        if not found:
            raise TargetError(f"no link {text} (links: "
                              f"{listing([str(d) for d in self.directions])})")
        if len(found) > 1:
            raise TargetError(f"link {text} is one of parallel links: name its port "
                              f"({', '.join(str(d) for d in found)})")
        return found[0]

    def cable(self, text: str) -> list[Direction]:
        """Both directions of cable ``A<->B`` (of every parallel cable between them)."""
        a, sep, b = text.partition("<->")
        found = [d for d in self.directions if sep and {d.src, d.dst} == {a, b} and a != b]
        if not found:
            cables = sorted({" <-> ".join(sorted((d.src, d.dst))).replace(" ", "")
                             for d in self.directions})
            raise TargetError(f"no cable {text} (cables: {listing(cables)})")
        return found

    def port(self, text: str) -> tuple[str, int]:
        """``SWITCH:PORT`` → (switch, port) of an existing port."""
        sw, _, port = text.rpartition(":")
        if not sw or not port.isdigit():
            raise TargetError(f"port {text!r}: want SWITCH:PORT (e.g. b0r0l0:3)")
        info = self.switch(sw)
        if int(port) not in info.ports:
            raise TargetError(f"switch {sw} has no port {port} (ports: "
                              f"{', '.join(str(p) for p in sorted(info.ports))})")
        return sw, int(port)

    def route(self, switch: str, prefix: str, planned: Sequence[str]) -> str:
        """The normalised ``prefix`` of one of ``planned`` (the switch's routes)."""
        self.switch(switch)
        try:
            net = str(ipaddress.ip_network(prefix, strict=False))
        except ValueError:
            raise TargetError(f"route {switch} {prefix}: not an IPv4 prefix") from None
        if planned and net not in planned:
            raise TargetError(f"switch {switch} has no route for {net} (its routes: "
                              f"{listing(list(planned))})")
        return net


__all__ = ["Direction", "FabricNames", "TargetError", "WORDS", "listing", "parse_target"]
