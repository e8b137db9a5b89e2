"""Where the faults scenario (``scenarios.faults``) puts each fault: every kind's target
is chosen from the fabric's description and the scenario's traffic, so that the same
rules name the default two-tier fabric's components and a three-tier, dual-port one's
(``topo/specs/pod2-dualport.yaml``, issue 29).

The traffic runs from the *near* side (the first flow's source NIC: block 0, or pod 0)
to the *far* side (its destination: the next block, or pod 1) on one rail. On two tiers
(leaves and spines) the targets are the ones the scenario always had; on three tiers
(pods joined by cores) the kinds that name a link, a route, a switch or a port are spread
over the tiers above the leaves, and the NIC-port kinds name both ports:

=====================  =================================  ==================================
kind                   two tiers (default fabric)         three tiers (pod2-dualport)
=====================  =================================  ==================================
gray_link              near leaf -> last spine            last near spine -> its first core
                                                          (port named: parallel cables)
corruption             first spine -> far last-rail leaf  first core -> far pod's first spine
flapping_link          near last-rail leaf <-> first      the same (leaf tier)
                       spine
blackhole              last spine's route to the far      last core's route to a last-rail
                       last-rail NIC's prefix             prefix no flow needs and its
                                                          probes cross (far side first)
hung_switch            last spine                         last core
slow_receiver          the first flow's destination NIC   the same (its port 0)
wrong_ecn_threshold    near leaf's uplink port to the     the near spine's core port the
                       first spine                        first flow leaves by (hash model)
dead_agent             the first flow's source host       the same
controller_down        controller                         controller
dead_nic_port          (one-port NICs: none)              the first host's NIC, port 1
dead_tor               (one-port NICs: none)              the last host's port-1 leaf
=====================  =================================  ==================================

>>> from topo.model import build_fabric
>>> [t for _, t, _ in fault_plan(build_fabric())][:4]
['link b0r0l0->s1', 'link s0->b1r1l0', 'cable b0r1l0<->s0', 'route s1 10.1.1.0/24']
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from host.tccl.crosspod import walk
from testbed.errors import TestbedError
from testbed.traffic import elephant_pairs
from topo.routes import fabric_routes, lookup

FaultSpec = tuple[str, str, dict[str, Any]]
"""(kind, target component name, parameters) of one fault."""


class FaultPlanError(TestbedError):
    """The fabric lacks a component a fault kind needs (a spec of the user's own with,
    say, no spine above a leaf or no core cable to the far pod): which kind, and why."""


@dataclass(frozen=True, slots=True)
class Sides:
    """The traffic's two ends as the rules use them: the first flow's source and
    destination NIC addresses, its NIC port and source port (None: not planned yet)."""

    src_ip: str
    dst_ip: str
    nic_port: int = 0
    sport: Optional[int] = None


def sides_of(fabric: Any, flows: Sequence[Any] = (), rail: int = 0) -> Sides:
    """The first flow's ends, or (no flows) the first elephant pair of ``rail``.

    >>> from topo.model import build_fabric
    >>> sides_of(build_fabric())
    Sides(src_ip='10.0.0.1', dst_ip='10.1.0.1', nic_port=0, sport=None)
    """
    if flows:
        f = flows[0]
        return Sides(f.src_ip, f.dst_ip, int(getattr(f, "nic_port", 0) or 0), int(f.sport))
    src, dst = elephant_pairs(fabric, rail, 1)[0]
    return Sides(src, dst)


def uplink_port(fabric: Any, leaf: str, spine: str) -> int:
    """The first port of ``leaf`` (or any switch) whose cable goes up to ``spine``.

    >>> from topo.model import build_fabric
    >>> uplink_port(build_fabric(), "b0r0l0", "s0") > 0
    True
    """
    for port, info in sorted(fabric.switch(leaf).ports.items()):
        if info.kind == "uplink" and info.peer_node == spine:
            return int(port)
    raise KeyError(f"{leaf} has no uplink to {spine}")


def link_name(fabric: Any, switch: str, port: int) -> str:
    """``link A->B`` of the direction ``switch`` sends by ``port``, with the port
    (``link A:P->B``) where ``switch`` has parallel cables to ``B`` (the monitor's and the
    injector's naming).

    >>> from topo.model import build_fabric
    >>> from topo.spec import load_spec
    >>> fab = build_fabric(load_spec("topo/specs/pod2-dualport.yaml"))
    >>> link_name(fab, "s1", 5), link_name(fab, "b0r0l0", 3)
    ('link s1:5->c1.0', 'link b0r0l0->s0')
    """
    ports = fabric.switch(switch).ports
    peer = ports[port].peer_node
    parallel = sum(1 for info in ports.values() if info.peer_node == peer) > 1
    return f"link {switch}{f':{port}' if parallel else ''}->{peer}"


def _nic(fabric: Any, ip: str) -> tuple[Any, Any]:
    for h in fabric.hosts:
        for n in h.nics:
            if n.ip == ip:
                return h, n
    raise KeyError(f"no NIC has address {ip}")


def _pod(h: Any) -> int:
    return int(getattr(h, "pod", 0) or 0)


def _spines_of(fabric: Any, leaf: str) -> list[str]:
    """The spines ``leaf`` is cabled to, in port order."""
    out: list[str] = []
    for _, info in sorted(fabric.switch(leaf).ports.items()):
        if info.kind == "uplink" and info.peer_node not in out:
            out.append(info.peer_node)
    return out


def _last_rail_leaf(fabric: Any, host: Any) -> str:
    return max(host.nics, key=lambda n: n.rail).leaf


def _route_prefix(fabric: Any, switch: str, ip: str) -> str:
    """The prefix of ``switch``'s longest-prefix route for ``ip`` (its own, not a default)."""
    route = lookup(fabric_routes(fabric).get(switch, ()), ip)
    if route is None:
        raise KeyError(f"{switch} has no route to {ip}")
    return route.prefix


def has_core(fabric: Any) -> bool:
    """True for a fabric of three tiers (core switches join its pods)."""
    return any(sw.role == "core" for sw in fabric.switches)


def fault_plan(fabric: Any, flows: Sequence[Any] = (), model: Any = None,
               rail: int = 0, probes: Any = None) -> list[FaultSpec]:
    """(kind, target, parameters) of every fault the scenario injects, in order (module
    docstring). ``flows``: the scenario's planned flows (default: the first elephant pair);
    ``model``: the published hash model (``programmer.hash_model()``): on three tiers the
    wrong ECN threshold then goes on the spine port the first flow leaves its pod by,
    else on the first core port of the first spine; ``probes``: the monitor's
    ``ProbePlan``: on three tiers the blackholed route is one its probes cross
    (:func:`blackhole_route`). A fabric on which a kind has no target: FaultPlanError.

    >>> from topo.model import build_fabric
    >>> fault_plan(build_fabric(), rail=9)
    Traceback (most recent call last):
    ...
    scenarios.faultplan.FaultPlanError: the faults scenario cannot place its faults on this fabric (rail 9): ValueError: no NIC on rail 9 in block 0 or 1
    """
    try:
        return _fault_plan(fabric, flows, model, rail, probes)
    except (IndexError, KeyError, ValueError) as exc:
        what = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        raise FaultPlanError(f"the faults scenario cannot place its faults on this fabric (rail {rail}): "
                             f"{type(exc).__name__}: {what}") from None


def _fault_plan(fabric: Any, flows: Sequence[Any], model: Any, rail: int, probes: Any) -> list[FaultSpec]:
    """:func:`fault_plan`'s work."""
    s = sides_of(fabric, flows, rail)
    near_host, near_nic = _nic(fabric, s.src_ip)
    far_host, far_nic = _nic(fabric, s.dst_ip)
    near_leaf = near_nic.leaf                     # port 0's leaf
    spines = _spines_of(fabric, near_leaf)
    s0, s1 = spines[0], spines[-1]
    far_last_leaf = _last_rail_leaf(fabric, far_host)
    far_last_ip = max(far_host.nics, key=lambda n: n.rail).ip
    slow = f"nic {far_nic.intf}"
    if not has_core(fabric):
        plan: list[FaultSpec] = [
            ("gray_link", f"link {near_leaf}->{s1}", {"loss_pct": 30.0}),
            ("corruption", f"link {s0}->{far_last_leaf}", {"corrupt_pct": 20.0}),
            ("flapping_link", f"cable {_last_rail_leaf(fabric, near_host)}<->{s0}",
             {"period_s": 2.0}),
            ("blackhole", f"route {s1} {_route_prefix(fabric, s1, far_last_ip)}", {}),
            ("hung_switch", f"switch {s1}", {}),
            ("slow_receiver", slow, {}),
            ("wrong_ecn_threshold", f"port {near_leaf}:{uplink_port(fabric, near_leaf, s0)}",
             {"kmin_pkts": 0}),
        ]
    else:
        cores_s1 = _spines_of(fabric, s1)           # a spine's uplinks go to its plane's cores
        far_spine = _spines_of(fabric, far_nic.leaf)[0]
        core0 = _spines_of(fabric, s0)[0]
        core_last = cores_s1[-1]
        down = min(p for p, info in fabric.switch(core0).ports.items()
                   if info.peer_node == far_spine)
        plan = [
            ("gray_link", link_name(fabric, s1, uplink_port(fabric, s1, cores_s1[0])),
             {"loss_pct": 30.0}),
            ("corruption", link_name(fabric, core0, down), {"corrupt_pct": 20.0}),
            ("flapping_link", f"cable {_last_rail_leaf(fabric, near_host)}<->{s0}",
             {"period_s": 2.0}),
            ("blackhole", f"route {core_last} "
             f"{blackhole_route(fabric, core_last, far_last_ip, near_host, flows, probes)}", {}),
            ("hung_switch", f"switch {core_last}", {}),
            ("slow_receiver", slow, {}),
            ("wrong_ecn_threshold", f"port {_ecn_port(fabric, s, model, s0, core0)}",
             {"kmin_pkts": 0}),
        ]
    plan += [("dead_agent", f"agent {near_host.name}", {}),
             ("controller_down", "controller", {})]
    return plan + dualport_faults(fabric)


def blackhole_route(fabric: Any, switch: str, far_ip: str, near_host: Any,
                    flows: Sequence[Any] = (), probes: Any = None) -> str:
    """The prefix of ``switch``'s route to blackhole: the first of its routes for the far
    side's last rail (``far_ip``), the near side's last rail, then its others in order,
    that no flow needs (neither its destination nor, for the ACKs, its source) and — with
    the monitor's probe plan ``probes`` — that at least two probe paths to it cross
    ``switch`` while another reaches it around ``switch`` (what the localiser's rule needs
    to name the route). A route no probe crosses would lose nothing the monitor sees: on
    the two-pod spec no probe to pod 1's rail 1 crosses core ``c1.1``, those to pod 0's do.
    The monitor's three-tier plan adds a route pass (probes inside a pod among them) so
    that the localiser tells a core's route from its spines' (monitor/README.md).

    >>> from topo.model import build_fabric
    >>> from topo.spec import load_spec
    >>> fab = build_fabric(load_spec("topo/specs/pod2-dualport.yaml"))
    >>> blackhole_route(fab, "c1.1", "10.0.3.1", fab.host("b0s0"))
    '10.0.3.0/24'
    """
    routes = [r.prefix for r in fabric_routes(fabric).get(switch, ())]
    near_ip = max(near_host.nics, key=lambda n: n.rail).ip
    first = [_route_prefix(fabric, switch, far_ip), _route_prefix(fabric, switch, near_ip)]
    order = first + [r for r in routes if r not in first]
    ends = [ipaddress.ip_address(ip) for f in flows for ip in (f.src_ip, f.dst_ip)]
    free = [p for p in order if not any(a in ipaddress.ip_network(p) for a in ends)] or order
    if probes is None:
        return free[0]
    prefix_of = getattr(probes, "dst_prefix", {})
    for p in free:
        to_p = [q for q in probes.paths if prefix_of.get(q.name) == p]
        through = [q for q in to_p if switch in q.switches]
        if len(through) >= 2 and len(through) < len(to_p):
            return p
    return free[0]


def _ecn_port(fabric: Any, s: Sides, model: Any, spine: str, core: str) -> str:
    """``SPINE:PORT``: the spine egress towards the cores the first flow takes (by the
    hash model), or without a model (or a planned port) ``spine``'s first port to ``core``."""
    if model is not None and s.sport is not None:
        for sw, port in walk(fabric, model, s.src_ip, s.nic_port, s.dst_ip, s.sport):
            if fabric.switch(sw).role == "spine" and fabric.switch(sw).ports[port].kind == "uplink":
                return f"{sw}:{port}"
    return f"{spine}:{uplink_port(fabric, spine, core)}"


def dualport_faults(fabric: Any) -> list[FaultSpec]:
    """On a fabric of dual-port NICs (issue 29) the two faults of their homing: the
    first host's NIC loses its second port (``dead_nic_port``), and the leaf of the last
    host's second port dies (``dead_tor``: every interface down; its NICs go on through
    their other leaf, the localiser must still name it). Nothing on a fabric of one-port
    NICs.

    >>> from topo.model import build_fabric
    >>> from topo.spec import load_spec
    >>> dualport_faults(build_fabric(load_spec("topo/specs/pod2-dualport.yaml")))
    [('dead_nic_port', 'nic b0s0-eth0p1', {}), ('dead_tor', 'switch p1.b0r0l1', {})]
    >>> dualport_faults(build_fabric())
    []
    """
    hosts = [h for h in fabric.hosts if h.nics and len(getattr(h.nics[0], "ports", ())) > 1]
    if not hosts:
        return []
    return [("dead_nic_port", f"nic {hosts[0].nics[0].ports[1].intf}", {}),
            ("dead_tor", f"switch {hosts[-1].nics[0].ports[1].leaf}", {})]


__all__ = ["FaultPlanError", "FaultSpec", "Sides", "blackhole_route", "dualport_faults", "fault_plan", "has_core", "link_name",
           "sides_of", "uplink_port"]
