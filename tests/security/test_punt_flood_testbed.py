"""An ARP flood from a compromised host on the live testbed (root, Mininet; skipped with
the reason otherwise).

The default fabric comes up on p4sim, programmed by ``controller.fabric_setup`` with TLS
(the testbed's PKI), so every port's ARP punts are policed
(``controller.fabric.puntguard.DEFAULT_ARP_PUNT``). Host b1s1 — a testbed host, its
certificate issued by the hosts' CA — sends 20,000 gratuitous ARP replies from its
namespace, each of which its leaf punts (``testbed.attacks.live_fabric_attacks``, row
``host-floods-arp-punts``): the controller gets no more PacketIns from b1s1's port than
the policer allows (burst + rate × the time they took), the rest are counted in
``FabricIngress.arp.punt_drops`` (the monitor exports them as
``astral_switch_port_arp_punt_drops_total``), and the controller's connection stays
primary and answered. Then the port's meter cell is reset (unconfigured: the switch as before the
policer) and the flood repeated: far more PacketIns than the policer would allow arrive,
which is what makes the test able to fail. ~30 s.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from controller.fabric_setup import meter_updates
from controller.fabric.puntguard import ARP_PUNT_DROPS_COUNTER, ARP_PUNT_METER, DEFAULT_ARP_PUNT
from controller.p4rt import update
from monitor.switch_exporter import SwitchReader, targets_from_record
from testbed.arpflood import port_policer, punt_flood
from testbed.attacks import SPOOF_ATTACKER, live_fabric_attacks
from testbed.pki import FabricPki
from testbed.spoof import host_shells
from testbed.traffic import LiveTestbed
from testbed.traffic import testbed_unavailable as _why   # test* names: not pytest's to collect

WHY = _why()
pytestmark = pytest.mark.skipif(WHY is not None, reason=WHY or "")
PUNT_DROPS_METRIC = "astral_switch_port_arp_punt_drops"


def test_a_host_cannot_flood_its_leafs_controller_with_arp(tb: LiveTestbed) -> None:
    nic = tb.fabric.host(SPOOF_ATTACKER).nics[0]
    leaf, port = nic.leaf, nic.leaf_port
    conn = tb.programmer.connection(leaf)
    pki = FabricPki.load(Path(tb.state.pki))
    shells = host_shells(tb.state)

    rows = {r.attack: r for r in live_fabric_attacks(shells, tb.fabric, pki,
                                                     connections=tb.programmer.connections)}
    assert rows["host-spoofs-source-address"].refused, rows["host-spoofs-source-address"]
    row = rows["host-floods-arp-punts"]
    assert row.refused and row.state_kept and row.code == "POLICED", row
    assert f"policer {DEFAULT_ARP_PUNT.rate_pps}/s, burst {DEFAULT_ARP_PUNT.burst_packets}" in row.detail

    # the monitor exports the policer's drops (its own read-only certificate)
    target = next(t for t in targets_from_record(tb.fabric, tb.state.switches, tb.state.pki)
                  if t.name == leaf)
    reader = SwitchReader(target, timeout_s=5.0)
    try:
        assert reader.read()[port].totals[PUNT_DROPS_METRIC] == \
            conn.read_counter(ARP_PUNT_DROPS_COUNTER, port)[port].packets > 0
    finally:
        reader.close()

    # without the port's meter cell (the switch as before the policer): the flood goes through
    conn.write([update(conn.meter_entry(ARP_PUNT_METER, port), "MODIFY")])
    try:
        flood = punt_flood(shells, tb.fabric, conn, SPOOF_ATTACKER)
        assert flood.policer is None and flood.policed_drops == 0, flood
        would_allow = dataclasses.replace(flood, policer=(DEFAULT_ARP_PUNT.rate_pps,
                                                          DEFAULT_ARP_PUNT.burst_packets))
        assert not would_allow.within_policer(), str(flood)    # far more than the policer lets by
    finally:
        conn.write(meter_updates(conn, tb.programmer.plans[leaf]))
    assert port_policer(conn, port) == (DEFAULT_ARP_PUNT.rate_pps, DEFAULT_ARP_PUNT.burst_packets)
