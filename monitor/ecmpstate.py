"""The switches' ECMP state as they hold it, and the probe paths it implies.

The probe plan predicts each probe's links with the hash model as the fabric was
programmed. GOR rewrites groups when a link goes down (the leaf's uplink group loses a
member) and adds detours (another leaf's routes to the dead link's far side point at a
smaller group); and it pins a flow it cannot move by its source port with an
``override.flows`` entry on the exact 5-tuple — which a probe may share: probes are
RoCEv2 flows too, and GOR, seeing one among a hot link's flows, pins it like any flow
without an agent (seen in the monitor's benchmark: two probe paths pinned onto ``s1``
for the rest of the run). A probe then takes other links than planned, and evidence read
against the planned links blames or clears the wrong ones. So the switch exporter also
reads every switch's ``ecmp.groups``, ``ecmp.members``, ``forwarding.routes`` to a group
and ``override.flows`` (:func:`read_ecmp`, one P4Runtime ``Read``, no arbitration), and
the monitor, when that state changes, re-predicts every probe path with the hash model
those tables imply and the pins (:func:`live_hash_model`, :func:`pins_of`,
:func:`repredict`).

Read only, and only what the switch answers: a switch that does not answer keeps its
last state; a group whose members are not all there (a member index with no entry, or a
port the switch does not have) is left out of the model, and the paths that would hash
over it keep their previous links (listed as not predicted).

>>> from topo.model import build_fabric
>>> from monitor.probes import plan_probes
>>> fab = build_fabric(); plan = plan_probes(fab)
>>> one_uplink = EcmpState(groups=((1, 0, 1),), members=((0, 3),))     # b0r0l0: s0 only
>>> model = live_hash_model(fab, {"b0r0l0": one_uplink})
>>> model.switch("b0r0l0").groups[1].members
('s0',)
>>> paths, lost = repredict(fab, model, plan.paths)
>>> sorted({str(p.links[1]) for p in paths if p.links[1].src == "b0r0l0"})
['b0r0l0->s0']
>>> lost             # into b0r0l0 over s1: no route there until the detours are read
['p2', 'p15']
"""
from __future__ import annotations

import dataclasses
import ipaddress
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from p4.v1 import p4runtime_pb2

from controller.fabric.detours import fabric_hash_model
from controller.fabric.ecmp import A_SELECT_PORTS_FIRST, link_group
from controller.fabric.entries import T_GROUPS, T_MEMBERS, T_ROUTES, Entry
from controller.fabric.plan import plan_fabric
from controller.p4rt import P4InfoHelper
from controller.p4rt.codec import decode
from monitor.evidence import ProbePath
from monitor.probes import Pins, is_tiered, predict_path, predict_tier_path
from p4src.hashmodel import PORTS_FIRST_FIELDS, FabricHashModel, GroupModel, RouteModel
from topo.routes import fabric_routes

A_ROUTE_GROUP = "FabricIngress.forwarding.set_ecmp_group"
T_OVERRIDES = "FabricIngress.override.flows"
ECMP_TABLES = (T_GROUPS, T_MEMBERS, T_ROUTES)
OVERRIDE_KEY = ("hdr.ipv4.src_addr", "hdr.ipv4.dst_addr", "hdr.ipv4.protocol",
                "hdr.udp.src_port", "hdr.udp.dst_port")


@dataclass(frozen=True, slots=True)
class EcmpState:
    """One switch's ECMP tables as read: groups ``(group id, base, size)``, members
    ``(member index, port)``, routes to a group ``(prefix, group id)``; sorted, so two
    reads of the same tables are equal."""

    groups: tuple[tuple[int, int, int], ...] = ()
    members: tuple[tuple[int, int], ...] = ()
    routes: tuple[tuple[str, int], ...] = ()
    overrides: tuple[tuple[str, str, int, int, int, int], ...] = ()
    """``override.flows`` pins: ``(src ip, dst ip, proto, sport, dport, port)``."""
    ports_first: tuple[int, ...] = ()
    """The group ids whose ``ecmp.groups`` entry is ``select_member_ports_first`` (a core's
    groups and a spine's down to its leaves on a three-tier fabric: they hash another field
    order, :data:`p4src.hashmodel.PORTS_FIRST_FIELDS`)."""


def ecmp_tables_in(info: P4InfoHelper) -> bool:
    """Whether the program has the three tables (``fabric.p4`` does; another may not)."""
    return all(info.has("table", t) for t in ECMP_TABLES)


def read_ecmp(stub: Any, info: P4InfoHelper, device_id: int, timeout_s: float) -> EcmpState:
    """The switch's :class:`EcmpState` in one ``Read`` of the three tables (wildcard
    table entries); ``grpc.RpcError`` when it does not answer."""
    tables = [*ECMP_TABLES, *((T_OVERRIDES,) if info.has("table", T_OVERRIDES) else ())]
    ids = {info.table_id(t): t for t in tables}
    req = p4runtime_pb2.ReadRequest(device_id=device_id, entities=[
        p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=tid)) for tid in ids])
    groups, members, routes, pins, first = [], [], [], [], []
    for resp in stub.Read(req, timeout=timeout_s):
        for ent in resp.entities:
            te = ent.table_entry
            table = ids.get(te.table_id)
            act = te.action.action
            if table is None or not act.action_id:
                continue
            params = {info.action_param(act.action_id, p.param_id).name: decode(p.value)
                      for p in act.params}
            if table == T_ROUTES:
                if info.get_name("action", act.action_id) != A_ROUTE_GROUP:
                    continue
                for m in te.match:
                    if m.HasField("lpm"):
                        net = ipaddress.IPv4Network((decode(m.lpm.value), m.lpm.prefix_len), strict=False)
                        routes.append((str(net), int(params.get("group_id", 0))))
                continue
            if table == T_OVERRIDES:
                got = {info.match_field(table, m.field_id).name: decode(m.exact.value)
                       for m in te.match if m.HasField("exact")}
                if all(k in got for k in OVERRIDE_KEY):
                    src, dst, proto, sport, dport = (got[k] for k in OVERRIDE_KEY)
                    pins.append((str(ipaddress.IPv4Address(src)), str(ipaddress.IPv4Address(dst)),
                                 proto, sport, dport, int(params.get("nexthop_id", 0))))
                continue
            key = decode(te.match[0].exact.value) if te.match and te.match[0].HasField("exact") else None
            if key is None:
                continue
            if table == T_GROUPS:
                groups.append((key, int(params.get("base", 0)), int(params.get("size", 0))))
                if info.get_name("action", act.action_id) == A_SELECT_PORTS_FIRST:
                    first.append(key)
            else:
                members.append((key, int(params.get("nexthop_id", 0))))
    return EcmpState(tuple(sorted(groups)), tuple(sorted(members)), tuple(sorted(routes)),
                     tuple(sorted(pins)), tuple(sorted(first)))


def pins_of(states: Mapping[str, EcmpState]) -> Pins:
    """The override pins of every switch, as :func:`monitor.probes.predict_path` takes
    them.

    >>> pins_of({"b0r0l0": EcmpState(overrides=(("10.0.0.1", "10.1.1.2", 17, 49152, 4791, 4),))})
    {'b0r0l0': {('10.0.0.1', '10.1.1.2', 17, 49152, 4791): 4}}
    """
    return {sw: {o[:5]: o[5] for o in st.overrides} for sw, st in states.items() if st.overrides}


def live_hash_model(fabric: Any, states: Mapping[str, EcmpState],
                    planned: Optional[FabricHashModel] = None) -> FabricHashModel:
    """The hash model the switches' tables imply: the ``planned`` one (default: the
    fabric's as programmed, :func:`controller.fabric.detours.fabric_hash_model`; its
    algorithms and seeds) with each switch of ``states`` holding the groups and routes
    read. A group with a member missing is left out (module docstring)."""
    base = planned if planned is not None else fabric_hash_model(fabric)
    out = FabricHashModel(dict(base.switches), base.version)
    for name, st in states.items():
        sw = next((s for s in fabric.switches if s.name == name), None)
        if sw is None or name not in out.switches:
            continue
        port_of = dict(st.members)
        groups: dict[int, GroupModel] = {}
        for gid, first, size in st.groups:
            ports = [port_of.get(first + i) for i in range(size)]
            if size < 1 or any(p is None or p not in sw.ports for p in ports):
                continue
            g = link_group(sw, gid, first, [int(p) for p in ports if p is not None])
            groups[gid] = GroupModel(g.base, g.members,
                                     PORTS_FIRST_FIELDS if gid in st.ports_first else None)
        routes = tuple(RouteModel(prefix, gid) for prefix, gid in st.routes if gid in groups)
        out.switches[name] = dataclasses.replace(out.switches[name], groups=groups, routes=routes)
    return out


def plan_states(plans: Mapping[str, Any]) -> dict[str, EcmpState]:
    """What each switch answers :func:`read_ecmp` with once programmed by ``plans``
    (:func:`controller.fabric.plan.plan_fabric`'s ``SwitchPlan`` by name): its
    ``ecmp.groups`` (and which are ports-first), ``ecmp.members`` and routes to a group,
    from the plan's own table entries.

    >>> from topo.model import build_fabric
    >>> st = plan_states(plan_fabric(build_fabric()))["b0r0l0"]
    >>> st.groups, st.members, st.ports_first
    (((1, 0, 2),), ((0, 3), (1, 4)), ())
    """
    return {name: _state_of(plan.entries) for name, plan in plans.items()}


def programmed_states(fabric: Any) -> dict[str, EcmpState]:
    """:func:`plan_states` of the fabric as the controller programs it."""
    return plan_states(plan_fabric(fabric))


def _state_of(entries: Sequence[Entry]) -> EcmpState:
    groups, members, routes, first = [], [], [], []
    for e in entries:
        if e.default:
            continue
        if e.table == T_GROUPS:
            gid = int(e.match["meta.ecmp_group_id"])
            groups.append((gid, int(e.params["base"]), int(e.params["size"])))
            if e.action == A_SELECT_PORTS_FIRST:
                first.append(gid)
        elif e.table == T_MEMBERS:
            members.append((int(e.match["meta.ecmp_member"]), int(e.params["nexthop_id"])))
        elif e.table == T_ROUTES and e.action == A_ROUTE_GROUP:
            net = ipaddress.IPv4Network(str(e.match["hdr.ipv4.dst_addr"]), strict=False)
            routes.append((str(net), int(e.params["group_id"])))
    return EcmpState(tuple(sorted(groups)), tuple(sorted(members)), tuple(sorted(routes)),
                     (), tuple(sorted(first)))


def repredict(fabric: Any, model: FabricHashModel, paths: Sequence[ProbePath],
              pins: Optional[Pins] = None) -> tuple[list[ProbePath], list[str]]:
    """Every probe path's links and switches as ``model`` predicts them (``pins``: the
    switches' override entries, :func:`pins_of`; a probe whose 5-tuple a controller
    pinned goes where the pin says), and the names of the paths it cannot predict (no
    group, no route: they keep their links). On a fabric with a core tier every hop is
    walked (:func:`monitor.probes.predict_tier_path`: leaf, spine, core, the destination
    pod's spine, whichever leaf of a dual-homed NIC its hash picks)."""
    nics = {n.intf: n for h in fabric.hosts for n in h.nics}
    routes = fabric_routes(fabric) if is_tiered(fabric) else None
    out, lost = [], []
    for p in paths:
        try:
            if routes is not None:          # three tiers: walk every hop (NIC port to NIC port)
                links, switches = predict_tier_path(fabric, model, routes, p.src_nic, p.src_ip,
                                                    p.dst_ip, p.sport, pins)
            else:
                links, switches = predict_path(fabric, model, nics[p.src_nic], nics[p.dst_nic],
                                               p.sport, pins)
        except (KeyError, ValueError):
            out.append(p)
            lost.append(p.name)
            continue
        out.append(dataclasses.replace(p, links=tuple(links), switches=tuple(switches)))
    return out, lost


__all__ = ["A_ROUTE_GROUP", "ECMP_TABLES", "EcmpState", "T_OVERRIDES", "ecmp_tables_in",
           "live_hash_model", "pins_of", "plan_states", "programmed_states", "read_ecmp",
           "repredict"]
