"""The switch with in-process ports (:class:`p4sim.switchd.device.SwitchDevice`):
forwarding, queueing metadata under a rate limit, PFC at the port MAC (consumed or passed
through, pause without loss), CPU port, digests, pcaps, program swap, no program, and the
two-half pipeline against run-to-completion."""
from __future__ import annotations

import os
import time

from conftest import DST, SRC, qm_fields, qm_frame
from p4sim.switchd.pcap import PortCapture, read_pcap
from p4sim.switchd.pfc import build_pfc_frame
from p4sim.v1model.switch import QueueMeta, V1ModelSwitch


def test_forwards_between_ports(rig) -> None:
    rig.p1.inject(qm_frame(seq=1))
    rig.p2.inject(qm_frame(seq=2))
    out2, out1 = rig.p2.take(5.0), rig.p1.take(5.0)
    assert qm_fields(out2)["seq"] == 1 and qm_fields(out2)["in_port"] == 1
    assert qm_fields(out1)["seq"] == 2 and qm_fields(out1)["in_port"] == 2
    st = rig.dev.port_status()
    assert st[1]["rx_frames"] == 1 and st[2]["tx_frames"] == 1
    assert st[2]["queues"][0]["enqueued"] == 1


def test_rate_limit_shows_queue_depth_in_metadata(rig) -> None:
    rig.dev.tm.set_queue_rate(200, port=2)                    # 5 ms per packet
    for i in range(10):
        rig.p1.inject(qm_frame(seq=i))
    got = [qm_fields(f) for f in rig.take_all(rig.p2, 10)]
    assert [g["seq"] for g in got] == list(range(10))
    assert max(g["enq_qdepth"] for g in got) >= 3
    assert got[-1]["deq_timedelta"] > got[0]["deq_timedelta"]
    assert got[-1]["deq_timedelta"] >= 20_000                 # waited behind >= 4 packets
    assert got[-1]["deq_qdepth"] == 0 and got[0]["enq_qdepth"] == 0


def test_tail_drop_in_the_switch(make_rig) -> None:
    rig = make_rig(queue_depth_pkts=4, queue_rate_pps=50)
    for i in range(12):
        rig.p1.inject(qm_frame(seq=i))
    rig.p1.wait_idle(5.0)
    deadline = time.monotonic() + 5
    while rig.dev.stats["tm_drops"] + rig.dev.tm.queue_stats(2)[2]["queues"][0]["enqueued"] < 12:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    q = rig.dev.tm.queue_stats(2)[2]["queues"][0]
    assert q["dropped"] >= 1 and q["dropped"] == rig.dev.stats["tm_drops"]


def test_pfc_pause_holds_port_without_loss_then_resume(make_rig) -> None:
    rig = make_rig(line_rate_gbps=0.0001)                     # 1 quantum = 5.12 ms
    rig.p2.inject(build_pfc_frame(DST, {0: 2000}))            # > 10 s pause on port 2
    rig.p2.wait_idle(5.0)
    for i in range(5):
        rig.p1.inject(qm_frame(seq=i))
    assert rig.p2.take(0.3) is None
    assert rig.p1.take(0.01) is None                          # the MAC consumed the PFC frame
    assert rig.dev.tm.is_paused(2, 0)
    rig.p2.inject(build_pfc_frame(DST, {0: 0}))               # resume
    got = [qm_fields(f)["seq"] for f in rig.take_all(rig.p2, 5)]
    assert got == list(range(5))
    q = rig.dev.tm.queue_stats(2)[2]["queues"][0]
    assert q["dropped"] == 0 and q["pause_frames"] == 2 and q["paused_us"] > 200_000


def test_pfc_passthrough_and_pfc_off_give_frame_to_parser(make_rig) -> None:
    rig = make_rig(pfc_passthrough=True, line_rate_gbps=0.0001)
    pfc = build_pfc_frame(SRC, {0: 1})
    rig.p2.inject(pfc)
    assert rig.p1.take(5.0) == pfc
    rig2 = make_rig(pfc_enabled=False)
    rig2.p2.inject(pfc)
    assert rig2.p1.take(5.0) == pfc
    assert not rig2.dev.tm.is_paused(2, 0)


def test_priority_queues_strict_priority(make_rig) -> None:
    rig = make_rig(priority_queues=8, line_rate_gbps=0.0001)
    rig.p2.inject(build_pfc_frame(DST, {0: 2000, 5: 2000}))  # hold both while filling
    rig.p2.wait_idle(5.0)
    for i in range(3):
        rig.p1.inject(qm_frame(prio=0, seq=i))
        rig.p1.inject(qm_frame(prio=5, seq=100 + i))
    rig.p1.wait_idle(5.0)
    deadline = time.monotonic() + 5
    while rig.dev.tm.queue_stats(2)[2]["depth"] < 6:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    rig.p2.inject(build_pfc_frame(DST, {0: 0, 5: 0}))
    got = [qm_fields(f)["seq"] for f in rig.take_all(rig.p2, 6)]
    assert got == [100, 101, 102, 0, 1, 2]


def test_cpu_port_packet_in_and_packet_out(rig) -> None:
    got: list[bytes] = []
    rig.dev.on_packet_in = got.append
    frame = qm_frame(dst=bytes.fromhex("0000000000cc"), seq=7)
    rig.p1.inject(frame)
    deadline = time.monotonic() + 5
    while not got:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    assert qm_fields(got[0])["seq"] == 7 and rig.dev.stats["packet_in"] == 1
    rig.dev.inject_cpu(qm_frame(seq=8))                       # from port 64 -> port 1
    assert qm_fields(rig.p1.take(5.0))["in_port"] == 64


def test_digest_sets_event(rig) -> None:
    rig.dev.digest_event.clear()
    rig.p1.inject(DST + SRC + b"\x99\x99" + bytes(4))
    assert rig.dev.digest_event.wait(5.0)
    assert len(rig.dev.program.state.digests) == 1


def test_pcaps_record_in_and_out(rig, tmp_path) -> None:
    rig.p1.capture = PortCapture(str(tmp_path), "s1-eth1")
    rig.p2.capture = PortCapture(str(tmp_path), "s1-eth2")
    frame = qm_frame(seq=3)
    rig.p1.inject(frame)
    out = rig.p2.take(5.0)
    assert read_pcap(os.path.join(tmp_path, "s1-eth1_in.pcap")) == [frame]
    assert read_pcap(os.path.join(tmp_path, "s1-eth2_out.pcap")) == [out]
    assert read_pcap(os.path.join(tmp_path, "s1-eth2_in.pcap")) == []


def test_no_program_drops_and_program_push_starts_forwarding(rig, qfwd) -> None:
    rig.dev.set_program(None)
    rig.p1.inject(qm_frame())
    assert rig.p2.take(0.2) is None and rig.dev.stats["no_program"] == 1
    rig.dev.set_program(qfwd)
    rig.p1.inject(qm_frame(seq=9))
    assert qm_fields(rig.p2.take(5.0))["seq"] == 9


def test_split_pipeline_matches_run_to_completion(qfwd) -> None:
    frame = qm_frame(prio=3, seq=5)
    whole = V1ModelSwitch(qfwd, clock=lambda: 100, priority_queues=8).process_packet(1, frame)
    sw = V1ModelSwitch(qfwd, clock=lambda: 100, priority_queues=8)
    work = sw.run_ingress(1, frame)
    assert [(w.port, w.priority) for w in work] == [(2, 3)]
    res = sw.run_egress(work[0], QueueMeta(enq_timestamp=40, enq_qdepth=7, deq_qdepth=6))
    assert res.work == []
    fields = qm_fields(res.frames[0][1])
    assert (fields["enq_qdepth"], fields["deq_qdepth"], fields["deq_timedelta"],
            fields["enq_timestamp"]) == (7, 6, 60, 40)
    assert qm_fields(whole[0][1])["enq_qdepth"] == 0
    assert res.frames[0][1][:15] == whole[0][1][:15]
