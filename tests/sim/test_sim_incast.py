"""The simulator's queue model (sim/queues.py), PFC network (sim/pfcnet.py) and incast
(sim/incast.py): the dynamic thresholds against Choudhury & Hahne's closed form, the
static mode's counts, the incast setup equal to the live scenario's, and the directions
the live run showed."""
from __future__ import annotations

import pytest

from p4src.buffermodel import DynamicThresholds, EcnAlpha, PfcAlpha, SharedBuffer, SharedBufferModel
from scenarios import incast as live_incast
from sim.cli import main
from sim.incast import (DATA_FRAME_BYTES, INCAST_DYNAMIC, INCAST_TIMING, QUEUE_PKTS, Comparison, IncastSetup,
                        incast_flows, load_live, lone_flow, queue_bin, simulate)
from sim.pfcnet import NetParams, PfcNet
from sim.queues import StaticThresholds, SwitchQueues, closed_form_cells, steady_state_cells
from testbed.traffic.flows import LEAF_UPLINK_GROUP, choose_ports
from topo.model import build_fabric
from controller.fabric import fabric_hash_model
from p4src.hashmodel import predict_member


@pytest.mark.parametrize("size_cells,log2", [(576, 7), (2048, 7), (1000, 0), (4096, 6)])
def test_the_dynamic_steady_state_is_choudhury_and_hahnes_closed_form(size_cells: int, log2: int) -> None:
    # each of N congested queues holds alpha B / (1 + N alpha); the switch pauses a group
    # once it reaches alpha x free, so it may hold up to one packet more, never less
    for alpha in ("1/4", "1/2", 1, 2, 4):
        for n in (1, 2, 3, 4, 8, 16):
            cfg = DynamicThresholds(SharedBuffer(size_cells, log2), {3: PfcAlpha(alpha)})
            pkt = cfg.buffer.cells(1082)
            got, closed = steady_state_cells(cfg, 3, n, 1082), closed_form_cells(cfg, 3, n)
            assert -1 <= got - closed < pkt, (alpha, n, got, closed)


def test_the_static_mode_pauses_at_xoff_resumes_at_xon_and_keeps_a_dropped_packets_count() -> None:
    q = SwitchQueues.static(StaticThresholds(xoff_pkts=3, xon_pkts=1))
    adms = [q.admit(1, 9, 1082) for _ in range(4)]
    assert [a.pause for a in adms] == [False, False, True, False]
    q.drop(adms[3])                            # tail-dropped: nothing counts it out
    assert q.ingress_count(1) == 4
    assert [q.leave(a, 0).resume for a in adms[:3]] == [False, False, True]


def test_the_dynamic_mode_is_the_buffer_model_packet_for_packet() -> None:
    q = SwitchQueues.dynamic(INCAST_DYNAMIC)
    ref = SharedBufferModel(INCAST_DYNAMIC)
    for i in range(80):
        a, b = q.admit(i % 3, 9, 1082), ref.arrive(i % 3, 9, 3, 1082)
        assert a.pause == b.pause and a.token == b
    assert q.ingress_count(0) == ref.ingress_cells[3]


def test_the_incast_setup_is_the_live_scenarios() -> None:
    assert INCAST_DYNAMIC == live_incast.INCAST_DYNAMIC
    assert (QUEUE_PKTS, DATA_FRAME_BYTES) == (live_incast.QUEUE_PKTS, live_incast.DATA_FRAME_BYTES)
    setup = IncastSetup()
    assert setup.port_rate_pps == live_incast.port_rate_pps(setup.flow_rate_pps)
    fab = build_fabric()
    pairs, _ = live_incast.incast_pairs(fab, setup.rail, setup.flows)
    flows = incast_flows(setup, fab)
    assert [(f.src_ip, f.dst_ip) for f in flows] == pairs
    assert [f.sport for f in flows] == choose_ports(fab, pairs, "random", setup.seed)
    model = fabric_hash_model(fab, frozenset())
    for f in flows:                            # the uplink the testbed's flows predict
        leaf = fab.switch(f.hops[0][0])
        if len(f.hops) > 1:
            member = predict_member(model.switch(leaf.name), LEAF_UPLINK_GROUP, f.src_ip, f.dst_ip, 17,
                                    f.sport, 4791)
            assert leaf.ports[f.hops[0][2]].peer_node == member.partition("#")[0]
    assert {f.hops[-1][1] for f in flows} == {2, 3, 4}     # 3 ingress ports, as the live run
    assert lone_flow(setup, flows).hops[0][0] == flows[0].hops[-1][0]


def test_a_lone_flow_queues_deeper_with_dynamic_thresholds_and_stays_under_static_xoff() -> None:
    setup = IncastSetup(run_s=2.0)
    fab = setup.fabric()
    st = simulate(setup, "static", "lone", INCAST_TIMING, 1, fab)
    dy = simulate(setup, "dynamic", "lone", INCAST_TIMING, 1, fab)
    assert st.peak_queue_pkts < setup.static.xoff_pkts < dy.peak_queue_pkts
    assert st.drops == dy.drops == 0 and st.pfc_frames > 0 and dy.pfc_frames > 0


def _two_leaves(drain_pps: float) -> PfcNet:
    # one NIC into leaf l0, on to leaf l1 whose port drains slowly; no ECN
    net = PfcNet(NetParams(), seed=1)
    no_ecn = StaticThresholds(kmin_pkts=10_000, kmax_pkts=10_000)
    for name in ("l0", "l1"):
        net.add_switch(name, SwitchQueues.static(no_ecn))
    net.add_port("l1", 9, rate_pps=drain_pps)
    net.add_link("l0", 5, "l1", 6)
    net.add_nic("h", "l0", 1)
    net.add_flow("f", "h", [("l0", 1, 5), ("l1", 6, 9)], rate_pps=250.0)
    return net


def test_a_pause_holds_the_upstream_port_and_backs_up_to_the_nic() -> None:
    # 125 pps: l1 falls from XOFF 32 to XON 16 in 0.13 s, within one PAUSE (0.34 s)
    r = _two_leaves(125.0).run(duration_s=2.0)
    assert r.tail_drops == 0 and r.lost_pkts == 0 and r.ecn_marks == 0
    assert r.pfc_frames >= 4 and r.nic_pauses >= 1
    assert r.peak_pkts[("l0", 5)] > 0                  # l0's port held while paused
    assert r.peak_pkts[("l1", 9)] < QUEUE_PKTS - 1         # l0 bursts its queue on RESUME


def test_a_pause_that_expires_before_the_resume_lets_the_upstream_overflow_the_port() -> None:
    # 40 pps: XOFF to XON takes 0.4 s, longer than one PAUSE; pfc.p4 sends one PAUSE per
    # crossing (no refresh), so the upstream sends again and the port tail-drops; the
    # dropped packets' counts stay (a stuck group): what the live incast's drops show
    r = _two_leaves(40.0).run(duration_s=2.0)
    assert r.tail_drops > 0 and r.lost_pkts > 0
    assert r.peak_pkts[("l1", 9)] == QUEUE_PKTS - 1


def test_the_comparison_reports_an_error_per_figure() -> None:
    live = load_live()
    assert live["dynamic-lone"]["peak_queue_pkts"] == 40 and live["static-incast"]["drops"] == 345
    sim = {k: {"pfc_frames": 55.0, "peak_queue_pkts": 28.0} for k in live}
    c = Comparison(sim, live, {k: {f: (0.0, 0.0) for f in ("pfc_frames", "peak_queue_pkts")} for k in live})
    assert c.error("static-lone", "pfc_frames") == pytest.approx(10.0)
    assert c.error("dynamic-lone", "peak_queue_pkts") == -12.0
    assert queue_bin(63) == 60 and queue_bin(31) == 28


def test_bad_incast_input_is_refused_with_the_flag(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    assert main(["incast", "--seeds", "0"]) == 2
    assert "--seeds" in capsys.readouterr().err
    bad = tmp_path / "f.yaml"
    bad.write_text("rails: 0\n")
    assert main(["incast", "--spec", str(bad)]) == 2
    assert "f.yaml: rails" in capsys.readouterr().err
