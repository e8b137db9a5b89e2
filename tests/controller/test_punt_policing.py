"""Control-plane policing of ARP punts (``controller.fabric.puntguard``), and
``p4src/fabric.p4`` on p4sim (both engines) with the plan's meter cells.

The plan: every port of every switch gets ``arp.punt_meter[port]`` at
``DEFAULT_ARP_PUNT`` (``pir = cir``, ``pburst = cburst``); ``arp_punt=None`` writes none and
leaves the table entries as they were; the switch-restore path writes the meter cells
after the entries (MODIFY, what BMv2 takes).

The data plane (leaf b0r0l0 of the default fabric, in process): with the cell of port 1
configured, a burst of gratuitous ARP replies gives ``burst`` PacketIns (to the CPU port),
the rest are dropped and counted in ``arp.punt_drops[1]`` and ``telemetry.drops[1]``; the
other port's punts go through; without the cell (the plan with ``arp_punt=None``, the
program as before the policer) every one is punted.
"""
from __future__ import annotations

import struct
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from p4.v1 import p4runtime_pb2

from controller.fabric.plan import plan_fabric
from controller.fabric.puntguard import (ARP_PUNT_DROPS_COUNTER, ARP_PUNT_METER, DEFAULT_ARP_PUNT,
                                         MeterSetting, PuntPolicer, punt_meters)
from controller.fabric_setup import meter_updates
from controller.switch_restore import plan_updates
from p4sim.engine.program import compile_program
from p4sim.frontend.parser import parse_file
from p4sim.native import compiler_status, make_switch
from topo.model import build_fabric

REPO = Path(__file__).resolve().parents[2]
CPU_PORT = 255
LEAF = "b0r0l0"
DROPS = "FabricIngress.telemetry.drops"


# ------------------------------------------------------------------------------ the plan
def test_every_port_of_every_switch_gets_the_default_arp_punt_meter() -> None:
    fab = build_fabric()
    plans = plan_fabric(fab)
    for sw in fab.switches:
        got = plans[sw.name].meters
        assert [m.index for m in got] == sorted(sw.ports), sw.name
        assert all(m == MeterSetting(ARP_PUNT_METER, m.index, DEFAULT_ARP_PUNT.rate_pps,
                                     DEFAULT_ARP_PUNT.burst_packets, DEFAULT_ARP_PUNT.rate_pps,
                                     DEFAULT_ARP_PUNT.burst_packets) for m in got), sw.name
    assert (DEFAULT_ARP_PUNT.rate_pps, DEFAULT_ARP_PUNT.burst_packets) == (100, 100)


def test_the_policer_can_be_set_or_left_out() -> None:
    fab = build_fabric()
    slow = PuntPolicer(rate_pps=5, burst_packets=10)
    plans = plan_fabric(fab, arp_punt=slow)
    assert {(m.cir, m.cburst, m.pir, m.pburst) for p in plans.values() for m in p.meters} == {(5, 10, 5, 10)}
    without = plan_fabric(fab, arp_punt=None)
    assert all(p.meters == [] for p in without.values())
    assert all(without[n].entries == plans[n].entries for n in plans)   # only the meters differ


@pytest.mark.parametrize("rate, burst, field", [(0, 1, "rate_pps"), (1, 0, "burst_packets"),
                                                (-5, 1, "rate_pps"), (1.5, 1, "rate_pps")])
def test_a_bad_policer_names_its_field(rate: Any, burst: Any, field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}: "):
        PuntPolicer(rate, burst)


def _fake_conn(asked: list[tuple[str, Any, Any]]) -> SimpleNamespace:
    def table_entry(table: str, match: Any, action: str, params: Any,
                    is_default: bool = False) -> p4runtime_pb2.TableEntry:
        return p4runtime_pb2.TableEntry()

    def meter_entry(meter: str, index: Any = None, config: Any = None) -> p4runtime_pb2.MeterEntry:
        asked.append((meter, index, config))
        return p4runtime_pb2.MeterEntry(meter_id=1)

    return SimpleNamespace(table_entry=table_entry, meter_entry=meter_entry)


def test_install_and_restore_write_every_meter_cell_with_modify() -> None:
    """``meter_updates`` (``FabricProgrammer.install``) and ``plan_updates`` (a restarted
    switch; GOR's recovery) write each cell once, as MODIFY (BMv2 refuses INSERT for
    meters), after the entries."""
    plan = plan_fabric(build_fabric())[LEAF]
    asked: list[tuple[str, Any, Any]] = []
    ups = meter_updates(_fake_conn(asked), plan)
    assert [u.type for u in ups] == [p4runtime_pb2.Update.MODIFY] * len(plan.meters)
    assert asked == [(ARP_PUNT_METER, m.index, (m.cir, m.cburst, m.pir, m.pburst)) for m in plan.meters]
    asked.clear()
    restored = plan_updates(_fake_conn(asked), plan, {})
    assert len(restored) == len(plan.clone_sessions) + len(plan.entries) + len(plan.meters)
    assert [u.entity.WhichOneof("entity") for u in restored[-len(plan.meters):]] == \
        ["meter_entry"] * len(plan.meters)
    assert len(asked) == len(plan.meters)


# ------------------------------------------------------------------------------ the data plane
def _gratuitous(mac: str, ip: str) -> bytes:
    hw = bytes.fromhex(mac.replace(":", ""))
    addr = bytes(int(x) for x in ip.split("."))
    arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 2, hw, addr, b"\xff" * 6, addr)
    return b"\xff" * 6 + hw + b"\x08\x06" + arp + bytes(18)


ENGINES = ["python", pytest.param("native", marks=pytest.mark.skipif(
    not compiler_status()[0], reason=compiler_status()[1]))]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("policed", [True, False], ids=["policed", "without-meter"])
def test_arp_punts_over_the_rate_are_dropped_before_the_cpu_port(engine: str, policed: bool) -> None:
    fab = build_fabric()
    host1, host2 = fab.host("b0s0").nics[0], fab.host("b0s1").nics[0]
    assert (host1.leaf, host1.leaf_port, host2.leaf_port) == (LEAF, 1, 2)
    path = str(REPO / "p4src" / "fabric.p4")
    prog = compile_program(parse_file(path, [str(REPO / "p4src"), str(REPO / "p4src" / "include")]),
                           path, trace=False)
    burst = 5
    for m in plan_fabric(fab, arp_punt=PuntPolicer(1, burst) if policed else None)[LEAF].meters:
        prog.state.meters[m.meter].set_config(m.index, cir=m.cir, cburst=m.cburst, pir=m.pir,
                                              pburst=m.pburst)
    sw = make_switch(prog, engine, cpu_port=CPU_PORT, log=None)
    flood = 20
    out = [sw.process_packet(1, _gratuitous(host1.mac, host1.ip)) for _ in range(flood)]
    punted = sum(1 for o in out if [p for p, _ in o] == [CPU_PORT])
    assert all(o == [] for o in out if [p for p, _ in o] != [CPU_PORT])      # dropped, not sent
    counters = prog.state.counters
    if policed:                 # a 1 packet/s rate: no token comes back within the burst
        assert punted == burst
        assert counters[ARP_PUNT_DROPS_COUNTER].read(1)[0] == flood - burst
        assert counters[DROPS].read(1)[0] == flood - burst
    else:                       # the switch as before the policer
        assert punted == flood
        assert counters[ARP_PUNT_DROPS_COUNTER].read(1)[0] == counters[DROPS].read(1)[0] == 0
    other = [sw.process_packet(2, _gratuitous(host2.mac, host2.ip)) for _ in range(burst)]
    assert [[p for p, _ in o] for o in other] == [[CPU_PORT]] * burst    # its own cell
    assert counters[ARP_PUNT_DROPS_COUNTER].read(2)[0] == 0


def test_punt_meters_is_in_port_order() -> None:
    assert [m.index for m in punt_meters([3, 1, 2])] == [1, 2, 3]
