"""Dual-port senders of a testbed run (no root): each flow's QP bound to a NIC port, the
sender's command line over both ports, the predicted uplink from the bound port's leaf."""
from __future__ import annotations

from pathlib import Path

import pytest

from controller.fabric import plan_fabric
from host.nic.affinity import FlowKey, TxAffinity
from host.nic.cli import build_parser, parse_lag_ports
from p4src.hashmodel import FabricHashModel
from testbed.traffic.flows import build_flows, elephant_pairs, hashed_nic_ports
from testbed.traffic.nicproc import NicOptions, sender_command
from topo.model import build_fabric
from topo.spec import load_spec

SPEC = Path(__file__).resolve().parents[2] / "topo" / "specs" / "pod2-dualport.yaml"


@pytest.fixture(scope="module")
def fabric_and_model() -> tuple[object, FabricHashModel, object]:
    fab = build_fabric(load_spec(SPEC))
    plans = plan_fabric(fab)
    model = FabricHashModel({n: p.hash_model() for n, p in plans.items()})

    def member_ports(sw: str, g: int) -> dict[str, int]:
        return dict(zip(plans[sw].groups[g].members, plans[sw].groups[g].ports))
    return fab, model, member_ports


def test_flows_bound_to_either_port_leave_by_that_ports_leaf(fabric_and_model: tuple) -> None:
    fab, model, member_ports = fabric_and_model
    pairs = elephant_pairs(fab, rail=0, count=4)
    sports = [49152, 49153, 49154, 49155]
    hashed = hashed_nic_ports(fab, pairs, sports)
    assert hashed == [TxAffinity().port_of(FlowKey.of(s, d, p)) for (s, d), p in zip(pairs, sports)]
    flows = build_flows(fab, pairs, sports, model, member_ports, nic_ports=[0, 1, 1, 0])
    nics = {n.ip: n for h in fab.hosts for n in h.nics}
    for f, port in zip(flows, [0, 1, 1, 0]):
        nic = nics[f.src_ip]
        assert f.nic_port == port and f.leaf == nic.ports[port].leaf
        assert f.gateway_mac == fab.switch(nic.ports[port].leaf).router_mac
        assert f.src_intfs == tuple(p.intf for p in nic.ports)
        assert f.predicted_uplink is not None and f.predicted_uplink.startswith(f.leaf + "->")
    assert {f.leaf for f in flows} == {nics[pairs[0][0]].ports[0].leaf, nics[pairs[0][0]].ports[1].leaf}
    default = build_flows(fab, pairs, sports, model, member_ports)
    assert all(f.nic_port == 0 and f.leaf == nics[f.src_ip].leaf for f in default)
    with pytest.raises(ValueError, match="nic_ports\\[0\\]: port 2"):
        build_flows(fab, pairs, sports, nic_ports=[2, 0, 0, 0])


def test_a_dual_port_sender_listens_on_both_ports_and_binds_each_qp(fabric_and_model: tuple) -> None:
    fab, _, _ = fabric_and_model
    pairs = [elephant_pairs(fab, rail=0, count=1)[0]] * 2
    flows = build_flows(fab, pairs, [50000, 50001], nic_ports=[1, 0])
    cmd = sender_command(flows, 5.0, Path("r.json"), NicOptions())
    args = build_parser().parse_args(cmd[3:])
    nic = next(n for h in fab.hosts for n in h.nics if n.ip == pairs[0][0])
    assert args.iface.split(",") == [p.intf for p in nic.ports]
    assert args.dst_mac.split(",") == [fab.switch(p.leaf).router_mac for p in nic.ports]
    assert parse_lag_ports(args.lag_port, 2) == [1, 0]
    single = build_flows(build_fabric(), [("10.0.0.1", "10.1.0.1")], [50000])
    assert "--lag-port" not in sender_command(single, 5.0, Path("r.json"), NicOptions())
