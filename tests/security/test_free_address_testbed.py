"""Datagrams from a compromised host to an address nobody holds, on the live testbed
(root, Mininet; skipped with the reason otherwise).

The default fabric comes up on p4sim, programmed by ``controller.fabric_setup`` with TLS
(the testbed's PKI), so every leaf drops its own subnets' free addresses
(``controller.fabric.plan``, the subnet drop routes). Host b1s1 — a testbed host, its
certificate issued by the hosts' CA — sends 100 datagrams to a free address of its subnet
(``testbed.attacks.live_fabric_attacks``, row ``host-loops-free-address``): the fabric's
switch-to-switch links carry none of them. Then the leaf's drop route is deleted (the
plan as before) and the same datagrams go round leaf and spine until their TTL runs out
(sec-red-s47 measured 6,482 frames for 100), which is what makes the test able to fail;
the route is written back. ~25 s.
"""
from __future__ import annotations

import ipaddress

import pytest

from controller.fabric.entries import T_ROUTES
from controller.p4rt import update
from testbed.attacks import SPOOF_ATTACKER, free_address_row
from testbed.freeaddr import free_address, free_address_flood
from testbed.spoof import host_shells
from testbed.traffic import LiveTestbed
from testbed.traffic import testbed_unavailable as _why   # test* names: not pytest's to collect

WHY = _why()
pytestmark = pytest.mark.skipif(WHY is not None, reason=WHY or "")


def test_a_hosts_datagrams_to_a_free_address_do_not_go_round_the_fabric(tb: LiveTestbed) -> None:
    nic = tb.fabric.host(SPOOF_ATTACKER).nics[0]
    conn = tb.programmer.connection(nic.leaf)
    shells = host_shells(tb.state)

    row = free_address_row(shells, tb.fabric, tb.programmer.connections, SPOOF_ATTACKER)
    assert row.refused and row.state_kept and row.code == "DROPPED", row

    # without the leaf's drop route (the plan as before): the datagrams go round
    addr = ipaddress.IPv4Address(free_address(tb.fabric, SPOOF_ATTACKER))
    (drop,) = [e for e in tb.programmer.plans[nic.leaf].entries
               if e.table == T_ROUTES and e.action.endswith(".drop")
               and addr in ipaddress.IPv4Network(e.match["hdr.ipv4.dst_addr"])]
    te = conn.table_entry(drop.table, drop.match, drop.action, drop.params)
    conn.write([update(te, "DELETE")])
    try:
        looped = free_address_flood(shells, tb.fabric, tb.programmer.connections, SPOOF_ATTACKER)
        assert looped.settled and looped.link_frames >= 10 * looped.frames, str(looped)
    finally:
        conn.write([update(te, "INSERT")])
