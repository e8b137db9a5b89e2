"""GOR chooses a NIC-port move by itself on the live two-pod dual-port testbed (root +
Mininet, under the lock; skipped otherwise): the story on ``topo/specs/pod2-dualport.yaml``
with dual-port senders (each QP bound to the port the bond's layer3+4 hash picks; the four
uplinks of the two leaves offered 70 % each on an even spread). With this seed the hash
model puts 3 flows on ``b0r0l0->s1``, 3 on ``b0r0l1->s0`` and 2 on ``b0r0l1->s1``: no path
from port 1's leaf passes the 75 % rule for a flow of ``b0r0l1->s0``, so GOR's decision log
orders a QP to the NIC's other port (``order_sent.nic_port``), the agent re-binds it, and
GOR sees the moved flow on an uplink of that port's leaf; the sender's bond then transmits
that QP on that port. Passed on i29-fix in 29.5 s (3 orders, 3 confirmed, max/mean over
the four uplinks 1.608 -> 1.002); ~80 s with bring-up on a busy machine."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from scenarios.common import ScenarioOptions
from scenarios.story import run_story
from testbed import traffic
from topo.spec import load_spec

SPEC = Path(__file__).resolve().parents[2] / "topo" / "specs" / "pod2-dualport.yaml"
SEED = 885677274        # a draw whose collision leaves GOR no room on one port's leaf


def test_gor_moves_a_qp_to_the_other_nic_port_by_itself(tmp_path: Path) -> None:
    why = traffic.testbed_unavailable()
    if why:
        pytest.skip(why)
    with traffic.testbed_up(spec=load_spec(SPEC), log_dir=tmp_path / "logs",
                    state_path=tmp_path / "state.json") as tb:
        fab = tb.fabric
        res = run_story(fab, tb.programmer, tb.state, tb.save_state,
                        ScenarioOptions(seed=SEED, runs_root=tmp_path / "runs"))
    assert not res.errors, res.errors
    port_orders = {e["order_id"]: e for e in res.events
                   if e.get("event") == "order_sent" and e.get("nic_port") is not None}
    assert port_orders, [e for e in res.events if e.get("event") in ("path_chosen", "order_sent")]
    nics = {n.ip: n for h in fab.hosts for n in h.nics}
    confirmed = [e for e in res.events
                 if e.get("event") == "order_confirmed" and e.get("order_id") in port_orders]
    assert confirmed, res.events
    for e in confirmed:
        order = port_orders[e["order_id"]]
        src_ip = str(order["flow"]).split(":")[0]
        leaf = nics[src_ip].ports[int(order["nic_port"])].leaf
        assert str(e["link"]).startswith(leaf + "->"), (order, e)       # the other leaf's uplink
    moved = {str(e["new_flow"]).rsplit("/", 1)[0] for e in confirmed}     # "a:sport->b:4791"
    reports = [json.loads(p.read_text()) for p in (res.run_dir / "nic").glob("send-*.json")]
    bond_qps = {q["flow"]: q for r in reports for q in r.get("bond", {}).get("qps", [])}
    new_port = {str(e["new_flow"]).rsplit("/", 1)[0]: int(port_orders[e["order_id"]]["nic_port"])
                for e in confirmed}
    for flow in moved:              # the agent re-bound it, and it last sent on the new port
        want = new_port[flow]
        assert bond_qps[flow]["affinity"] == want and bond_qps[flow]["port"] == want, (flow, bond_qps)
    assert all(f["qp_state"] == "RTS" for r in reports for f in r["flows"]), reports
