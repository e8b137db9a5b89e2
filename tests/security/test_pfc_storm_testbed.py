"""A PFC PAUSE storm from a compromised host on the live testbed (root, Mininet; skipped
with the reason otherwise).

The default fabric comes up on p4sim, programmed by ``controller.fabric_setup`` with TLS
(the testbed's PKI), so every switch has the egress queue limit
(``controller.fabric.admission``, ``p4src/include/control/admission.p4``). Host b1s1 — a
testbed host, its certificate issued by the hosts' CA — sends PAUSE frames for 3 s while
b0s1 (another leaf) sends it 1,000 datagrams a second in the RoCE data class
(``testbed.attacks.live_fabric_attacks``, row ``host-pauses-its-leaf``): its leaf's queue
towards it fills, the limit drops what does not fit (counted in
``FabricIngress.admission.drops``, which the monitor exports as
``astral_switch_port_queue_limit_drops_total``), and once the counts settle the leaf's uplink PFC cells
are back at 0 packets, not paused; the leaf's PFC watchdog (``testbed.net.PFC_WATCHDOG``,
200 ms, ``forward``) found its queue towards the attacker in a storm, sent its packets on
despite the PAUSE frames and restored it once they stopped (its counters in p4sim's
``queue_stats``; before the watchdog the queue stayed paused). Then the limit is taken off (the default action back
to ``NoAction``: the switch as before) and the storm repeated: the target's queue
tail-drops what the program had counted and the uplink cells stay behind (before the
limit, 735 and 1,224 packets, ``paused`` stuck at 1), which is what makes the test able
to fail. The cells are cleared and the limit written again at the end. ~40 s.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from controller.fabric.admission import ADMISSION_DROPS_COUNTER, T_ADMISSION
from controller.p4rt import update
from monitor.switch_exporter import SwitchReader, targets_from_record
from testbed.attacks import PAUSE_SENDER, SPOOF_ATTACKER, live_fabric_attacks
from testbed.control import open_control
from testbed.pfcstorm import DATA_PRIORITY, OCCUPANCY, PAUSED, pause_storm
from testbed.pki import FabricPki
from testbed.spoof import host_shells
from testbed.traffic import LiveTestbed
from testbed.traffic import testbed_unavailable as _why   # test* names: not pytest's to collect

WHY = _why()
pytestmark = pytest.mark.skipif(WHY is not None, reason=WHY or "")
LIMIT_DROPS_METRIC = "astral_switch_port_queue_limit_drops"


def test_a_hosts_pause_storm_leaves_no_count_behind_in_its_leaf(tb: LiveTestbed) -> None:
    nic = tb.fabric.host(SPOOF_ATTACKER).nics[0]
    leaf = nic.leaf
    conn = tb.programmer.connection(leaf)
    pki = FabricPki.load(Path(tb.state.pki))
    shells = host_shells(tb.state)

    (row,) = live_fabric_attacks(shells, tb.fabric, pki, state=tb.state)[1:]
    assert row.attack == "host-pauses-its-leaf"
    assert row.refused and row.state_kept and row.code == "NO_LEAK", row
    port = nic.leaf_port                             # the leaf's port towards the attacker
    dropped = conn.read_counter(ADMISSION_DROPS_COUNTER, port)[port].packets
    assert dropped > 0

    # the monitor exports the limit's drops (its own read-only certificate)
    target = next(t for t in targets_from_record(tb.fabric, tb.state.switches, tb.state.pki)
                  if t.name == leaf)
    reader = SwitchReader(target, timeout_s=5.0)
    try:
        assert reader.read()[port].totals[LIMIT_DROPS_METRIC] == dropped
    finally:
        reader.close()

    # the leaf's PFC watchdog: a storm found on the queue towards the attacker (PAUSE
    # ignored, its packets sent on, none dropped), restored after the PAUSE frames stopped
    (limit,) = [e for e in tb.programmer.plans[leaf].entries if e.table == T_ADMISSION]
    ctl = open_control(tb.state.target, tb.state.switches[leaf], leaf)
    try:
        q = ctl.queue_stats(port)[port]["queues"][DATA_PRIORITY]
        assert q["pfcwd_storms"] >= 1 and q["pfcwd_restored"] == q["pfcwd_storms"], q
        assert not q["pfcwd_storm"] and not q["paused"] and q["pfcwd_dropped"] == 0, q
        assert q["depth"] == 0 and q["dequeued"] > 0, q

        # without the limit (the switch as before): the target's tail drops leave the counts
        conn.write([update(conn.table_entry(T_ADMISSION, {}, "NoAction", {}, is_default=True),
                           "MODIFY")])
        storm = pause_storm(shells, tb.fabric, tb.state, SPOOF_ATTACKER, PAUSE_SENDER)
        assert storm.settled and storm.leaked(), str(storm)
    finally:
        ctl.register_reset(OCCUPANCY)
        ctl.register_reset(PAUSED)
        ctl.close()
        conn.write([update(conn.table_entry(limit.table, limit.match, limit.action, limit.params,
                                            is_default=True), "MODIFY")])
