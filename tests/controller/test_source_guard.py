"""The IPv4 source guard of the fabric plan (``controller.fabric.sourceguard``), and
``p4src/fabric.p4`` on p4sim programmed with it.

The plan: every leaf port whose peer is not a switch is guarded and allows exactly the
addresses of the NICs cabled to it (a dual-port NIC's one address on both of its leaf
ports, on both leaves); spines and cores get nothing; ``source_guard=False`` writes
nothing; every source a probe of the monitor's plan sends with is allowed where it enters;
the switch-restore path writes the guard with the rest of the plan.

The data plane (one leaf of the default fabric, in process): the host's own source is
forwarded and sampled; another host's source, or a made-up one, is dropped before
forwarding and sampling, and counted in ``source_guard.drops`` and ``telemetry.drops``;
the same frames on an unguarded leaf (the plan without the guard) are forwarded, which is
what the old program did.
"""
from __future__ import annotations

import ipaddress
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from p4.v1 import p4runtime_pb2

from controller.fabric.entries import Entry
from controller.fabric.plan import plan_fabric
from controller.fabric.sourceguard import (ALLOW_ACTION, GUARD_DROPS_COUNTER, GUARD_PORT_ACTION,
                                           T_GUARD_PORTS, T_GUARD_SOURCES, allowed_sources,
                                           guard_entries)
from controller.fabric.topology import nic_attachments
from controller.switch_restore import plan_updates
from monitor.probes import plan_probes
from p4sim.engine.program import compile_program
from p4sim.frontend.parser import parse_file
from p4sim.runtime.tables import ActionCall, Exact
from p4sim.v1model.switch import V1ModelSwitch
from test_fabric_dualport_p4sim import TABLES, _program, _udp_frame
from topo.model import Fabric, build_fabric
from topo.spec import load_spec

REPO = Path(__file__).resolve().parents[2]
SPECS = {"default": None, "dualport": "dualport.yaml", "pod2-dualport": "pod2-dualport.yaml"}
SAMPLING = "FabricIngress.sampling.config"
DROPS = "FabricIngress.telemetry.drops"


def _fabric(spec: str) -> Fabric:
    name = SPECS[spec]
    return build_fabric(load_spec(REPO / "topo" / "specs" / name)) if name else build_fabric()


def _guard_of(entries: list[Entry]) -> tuple[set[int], set[tuple[int, str]]]:
    ports = {e.match["standard_metadata.ingress_port"] for e in entries if e.table == T_GUARD_PORTS}
    sources = {(e.match["standard_metadata.ingress_port"], e.match["hdr.ipv4.src_addr"])
               for e in entries if e.table == T_GUARD_SOURCES}
    return ports, sources


# ------------------------------------------------------------------------------ the plan


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_every_nic_port_is_guarded_with_exactly_its_nics_address(spec: str) -> None:
    fab = _fabric(spec)
    plans = plan_fabric(fab)
    names = {s.name for s in fab.switches}
    want: dict[str, set[tuple[int, str]]] = {s.name: set() for s in fab.switches}
    for host in fab.hosts:
        for nic in host.nics:
            for leaf, port in nic_attachments(nic):
                want[leaf].add((port, nic.ip))
    dual = 0
    for sw in fab.switches:
        ports, sources = _guard_of(plans[sw.name].entries)
        host_ports = {p for p, info in sw.ports.items() if info.peer_node not in names}
        assert ports == host_ports, sw.name
        assert sources == want[sw.name], sw.name
        assert (sw.role == "leaf") == bool(ports), sw.name            # spines, cores: none
        e = next((e for e in plans[sw.name].entries if e.table == T_GUARD_PORTS), None)
        assert e is None or (e.action, dict(e.params)) == (GUARD_PORT_ACTION, {})
        assert all(e.action == ALLOW_ACTION for e in plans[sw.name].of(T_GUARD_SOURCES))
        assert len(plans[sw.name].of(T_GUARD_SOURCES)) == len(sources)  # no duplicates
        assert allowed_sources(sw, fab) == {p: sorted({ip for q, ip in sources if q == p},
                                                      key=ipaddress.IPv4Address) for p in ports}
        assert guard_entries(sw, fab) == [x for x in plans[sw.name].entries
                                          if x.table in (T_GUARD_PORTS, T_GUARD_SOURCES)]
    planned = {(name, p, ip) for name, plan in plans.items() for p, ip in _guard_of(plan.entries)[1]}
    for host in fab.hosts:
        for nic in host.nics:         # allowed on each of its ports, on no other port
            at = nic_attachments(nic)
            dual += len(at) == 2
            assert {(sw, p) for sw, p, ip in planned if ip == nic.ip} == set(at), nic.ip
    assert (dual > 0) == (spec != "default")


def test_the_guard_can_be_left_out() -> None:
    fab = build_fabric()
    for plan in plan_fabric(fab, source_guard=False).values():
        assert plan.count(T_GUARD_PORTS) == plan.count(T_GUARD_SOURCES) == 0
    with_guard = plan_fabric(fab)["b0r0l0"].entries
    without = plan_fabric(fab, source_guard=False)["b0r0l0"].entries
    assert [e for e in with_guard if e.table not in (T_GUARD_PORTS, T_GUARD_SOURCES)] == without


@pytest.mark.parametrize("spec", ["default", "dualport"])
def test_every_probe_of_the_monitor_is_sent_with_an_allowed_source(spec: str) -> None:
    """The monitor's probes leave a NIC port with the NIC's address: the guard of the
    leaf port they enter allows it (else the monitor would see every path as lost)."""
    fab = _fabric(spec)
    plans = plan_fabric(fab)
    port_of = {p.intf: (p.leaf, p.leaf_port) for h in fab.hosts for n in h.nics
               for p in (getattr(n, "ports", None) or [n])}
    probes = plan_probes(fab).paths
    assert probes
    for path in probes:
        leaf, port = port_of[path.links[0].src]
        assert (port, path.src_ip) in _guard_of(plans[leaf].entries)[1], path


def test_a_restored_switch_gets_the_guard_back() -> None:
    """``controller.switch_restore.plan_updates`` (a restarted switch; GOR's recovery)
    writes the guard's entries with the rest of the plan."""
    fab = build_fabric()
    plan = plan_fabric(fab)["b0r0l0"]
    asked: list[tuple[str, tuple[Any, ...]]] = []

    def table_entry(table: str, match: Any, action: str, params: Any,
                    is_default: bool = False) -> p4runtime_pb2.TableEntry:
        asked.append((table, tuple(match.items())))
        return p4runtime_pb2.TableEntry()

    def meter_entry(meter: str, index: Any = None, config: Any = None) -> p4runtime_pb2.MeterEntry:
        return p4runtime_pb2.MeterEntry()

    ups = plan_updates(SimpleNamespace(table_entry=table_entry, meter_entry=meter_entry), plan, {})
    assert len(ups) == len(plan.entries) + len(plan.clone_sessions) + len(plan.meters)
    got = {a for a in asked if a[0] in (T_GUARD_PORTS, T_GUARD_SOURCES)}
    assert got == {(e.table, tuple(e.match.items())) for e in guard_entries(fab.switch("b0r0l0"), fab)}
    assert len(got) == 4        # two host ports, one NIC each


# ------------------------------------------------------------------------------ the data plane
LEAF = "b0r0l0"


def _leaf(guard: bool) -> tuple[Any, V1ModelSwitch]:
    """Leaf b0r0l0 of the default fabric on p4sim with the plan's forwarding (and, with
    ``guard``, its source guard) and 1-in-1 sampling on every port."""
    fab = build_fabric()
    path = str(REPO / "p4src" / "fabric.p4")
    prog = compile_program(parse_file(path, [str(REPO / "p4src"), str(REPO / "p4src" / "include")]),
                           path, trace=False)
    entries = plan_fabric(fab, source_guard=guard)[LEAF].entries
    assert T_GUARD_PORTS in TABLES and any(e.table == T_GUARD_PORTS for e in entries) == guard
    _program(prog, entries)
    for port in fab.switch(LEAF).ports:
        prog.state.tables[SAMPLING].add_entry([Exact(port)], ActionCall(
            "FabricIngress.sampling.sample", (1,)))
    return prog, V1ModelSwitch(prog, cpu_port=255, log=None)


def _send(sw: V1ModelSwitch, port: int, src: str, dst: str, sport: int) -> list[int]:
    return [p for p, _ in sw.process_packet(port, _udp_frame(src, dst, sport))]


def _sampled_sources(prog: Any) -> list[str]:
    return [str(ipaddress.IPv4Address(values[1])) for dl in prog.state.digests.drain()
            for values in dl.values if dl.digest_name.endswith("flow_sample_t")]


@pytest.mark.parametrize("guard", [True, False], ids=["guarded", "without-guard"])
def test_a_spoofed_source_is_dropped_before_forwarding_and_sampling(guard: bool) -> None:
    fab = build_fabric()
    leaf = fab.switch(LEAF)
    own = fab.host("b0s0").nics[0]              # on port 1 of b0r0l0
    neighbour = fab.host("b0s1").nics[0]        # port 2
    remote = fab.host("b1s0").nics[0]           # behind another leaf
    assert (own.leaf, own.leaf_port, neighbour.leaf_port) == (LEAF, 1, 2)
    uplinks = [p.port for p in leaf.ports_of_kind("uplink")]
    prog, sw = _leaf(guard)
    (first,) = _send(sw, 1, own.ip, remote.ip, 50000)         # its own source: forwarded
    assert first in uplinks
    spoofed = [neighbour.ip, remote.ip, "192.0.2.1"]           # a host's, a made-up address
    out = [_send(sw, 1, src, remote.ip, 50001 + i) for i, src in enumerate(spoofed)]
    assert _send(sw, uplinks[0], remote.ip, own.ip, 50010) == [1]   # an uplink is not guarded
    counters = prog.state.counters
    if guard:
        assert out == [[], [], []]
        assert counters[GUARD_DROPS_COUNTER].read(1)[0] == 3
        assert counters[DROPS].read(1)[0] == 3
        assert sum(counters[GUARD_DROPS_COUNTER].read(p)[0] for p in range(512)) == 3
        assert sorted(_sampled_sources(prog)) == sorted([own.ip, remote.ip])
    else:                                    # the switch as before the guard: all forwarded
        assert all(len(o) == 1 for o in out)
        assert counters[GUARD_DROPS_COUNTER].read(1)[0] == counters[DROPS].read(1)[0] == 0
        assert set(spoofed) <= set(_sampled_sources(prog))
