"""TCCL on dual-port NICs (host.tccl.dualport): NIC port and source port planned together.
Pure data (published hash model, the NIC's tx-port hash); ~5 s on a loaded machine."""
from __future__ import annotations

import pytest

from controller.fabric.detours import fabric_hash_model
from host.nic.affinity import FlowKey, TxAffinity
from host.tccl.dualport import dualport_loads, plan_dualport, random_plan
from host.tccl.portplan import PortPlanError
from p4src.hashmodel import predict_member
from topo.model import build_fabric
from topo.spec import FabricSpec

SPEC = FabricSpec(blocks=2, servers_per_block=2, rails=2, ports_per_nic=2, leaves_per_rail=2,
                  spines=2)


@pytest.fixture(scope="module")
def fab_model():
    fab = build_fabric(SPEC)
    return fab, fabric_hash_model(fab)


def _pairs(fab, qps: int) -> list[tuple[str, str]]:
    out = []
    for s in range(2):
        for src, dst in zip(fab.host(f"b0s{s}").nics, fab.host(f"b1s{1 - s}").nics):
            out += [(src.ip, dst.ip)] * qps
    return out


@pytest.mark.parametrize("qps", [2, 4])
def test_tccl_balances_nic_ports_and_uplinks(fab_model, qps: int) -> None:
    fab, model = fab_model
    pairs = _pairs(fab, qps)
    plan = plan_dualport(fab, model, pairs)
    loads = dualport_loads(fab, model, plan.flows)
    assert loads.max_over_mean == 1.0, loads
    assert sum(loads.nic_ports.values()) == sum(loads.uplinks.values()) == len(pairs)
    for f in plan.flows:
        # the bond's own hash sends the QP out of the planned port: no override needed
        assert TxAffinity().port_of(FlowKey.of(f.src, f.dst, f.sport)) == f.nic_port
        assert 49152 <= f.sport <= 65535
    # independent check of the uplinks: the leaf of the planned port hashes each flow
    nics = {n.ip: n for h in fab.hosts for n in h.nics}
    per_uplink: dict[tuple[str, str], int] = {}
    for f in plan.flows:
        leaf = nics[f.src].ports[f.nic_port].leaf
        m = predict_member(model.switch(leaf), 1, f.src, f.dst, 17, f.sport, 4791)
        per_uplink[(leaf, m)] = per_uplink.get((leaf, m), 0) + 1
    assert max(per_uplink.values()) == qps // 2 and len(per_uplink) == 8


def test_random_ports_collide(fab_model) -> None:
    fab, model = fab_model
    worst = max(dualport_loads(fab, model, random_plan(fab, _pairs(fab, 4), seed).flows).max_over_mean
                for seed in range(4))
    assert worst > 1.0


def test_bad_flows_are_refused(fab_model) -> None:
    fab, model = fab_model
    with pytest.raises(PortPlanError, match="no NIC has address 10.9.9.9"):
        plan_dualport(fab, model, [("10.0.0.1", "10.9.9.9")])
    with pytest.raises(PortPlanError, match="share a leaf"):
        plan_dualport(fab, model, [("10.0.0.1", "10.0.0.2")])
