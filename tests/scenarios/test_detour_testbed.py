"""Detours on a live p4sim testbed (root + Mininet; skipped otherwise with the reason):
the cable b0r0l0 – s1 is cut, so s1 has no way to b0r0l0 any more. 64 UDP datagrams from
a block-1 NIC to a b0r0l0 NIC, one per source port (scenarios/detour_probe.py): before GOR hears
of the cut, the ones b1r0l0 hashes onto s1 are lost; once GOR has taken the link down,
b1r0l0 routes b0r0l0's subnet to its detour group (s0 only) and every datagram arrives.
A GOR restarted over the cut learns it and adopts the detours; the link back up
removes them. Brings up its own fabric (~30 s)."""
from __future__ import annotations

from pathlib import Path

import pytest


def test_traffic_to_a_leaf_its_spine_lost_takes_the_detour(tmp_path: Path) -> None:
    from testbed.traffic import testbed_unavailable, testbed_up
    from scenarios.detour_probe import PROBES, probe_detour
    why = testbed_unavailable()
    if why:
        pytest.skip(why)
    with testbed_up(log_dir=tmp_path / "logs", state_path=tmp_path / "state.json") as tb:
        r = probe_detour(tb, "b0r0l0", "s1")
    print(f"detour: {r.lost_before}/{PROBES} lost before GOR, {r.lost_after} after; "
          f"written in {r.written_s:.3f} s; {r.detours}")
    assert r.sender == "b1r0l0" and r.lost_healthy == 0, r
    assert r.lost_before > 0, f"the cut spine dropped nothing: the probe proves nothing ({r})"
    assert r.lost_after == 0, r
    assert r.detours == [f"{n}: 10.0.0.0/24 -> s0" for n in ("b0r1l0", "b1r0l0", "b1r1l0")], r
    # a GOR restarted over the cut learns it from the groups and adopts the three detours;
    # its link_up then removes them
    assert r.restart_down_links == ["b0r0l0:4"] and r.restart_adopted_detours == 3, r
    assert r.routes_after_up == 4, r     # two /32s, its subnet's drop route, 10.0.0.0/8 again
