"""What the NIC emulator's twin-QP tests share: one flow, the replies its receiver would
send, and a script of events (ACKs, a NAK, CNPs, a PAUSE, a source-port change) given to
two QPs alike, so that two ways of making frames can be compared step by step
(test_nic_batch.py: one by one vs batched; test_nic_native.py: Python vs C).

    >>> reply(OP_CNP, 0).opcode == OP_CNP
    True
"""
from __future__ import annotations

from typing import Sequence

from host.nic.frames import OP_CNP, FlowSpec, FrameTemplate, RoceInfo, aeth_bytes, build_cnp, parse_roce
from host.nic.pfc import PfcState
from host.nic.qp import SenderQP
from host.nic.rc import AETH_ACK, AETH_NAK_PSN_SEQ

FLOW = FlowSpec("02:00:00:00:00:01", "02:00:00:00:01:01", "10.0.0.1", "10.1.0.1", 49152, 7)

Event = tuple[str, object]


def reply_frame(kind: int, psn: int, msn: int = 0, src_ip: str = "") -> bytes:
    """The receiver's answer to :data:`FLOW` as bytes: a CNP (``kind`` OP_CNP) or an
    ACK/NAK (``kind`` an AETH syndrome) for ``psn``; ``src_ip``: sent from another host."""
    back = FlowSpec(FLOW.dst_mac, FLOW.src_mac, src_ip or FLOW.dst_ip, FLOW.src_ip, FLOW.sport, 7)
    return build_cnp(back) if kind == OP_CNP else FrameTemplate.ack(back).frame(psn, ext=aeth_bytes(kind, msn))


def reply(kind: int, psn: int, msn: int = 0) -> RoceInfo:
    """The receiver's answer to :data:`FLOW`: a CNP (``kind`` OP_CNP) or an ACK/NAK
    (``kind`` an AETH syndrome) for ``psn``, parsed as the sender reads it."""
    info = parse_roce(reply_frame(kind, psn, msn))
    assert info is not None
    return info


def scripted_events(step: int, qp: SenderQP, cnp_steps: Sequence[int] = (30, 31, 90)) -> list[Event]:
    """The events of ``step`` (4 ms steps): an ACK every fifth step, a NAK at 60, CNPs
    at ``cnp_steps``, a PAUSE at 120, a source-port change at 150; ACK/NAK PSNs from
    ``qp``'s state (both twins hold the same)."""
    events: list[Event] = []
    if step % 5 == 4:
        events.append(("frame", reply(AETH_ACK, qp.rc.psn(max(0, qp.rc.high_seq - 3)), qp.rc.high_seq // 4)))
    if step == 60:
        events.append(("frame", reply(AETH_NAK_PSN_SEQ, qp.rc.psn(qp.rc.acked_seq + 2))))
    if step in cnp_steps:
        events.append(("frame", reply(OP_CNP, 0)))
    if step == 120:
        events.append(("pause", {3: 2000}))
    if step == 150:
        events.append(("sport", 50000))
    return events


def give_events(events: Sequence[Event], twins: Sequence[tuple[SenderQP, PfcState]], now: float) -> None:
    """Each event to every (QP, its PFC state) in ``twins``, in order."""
    for kind, what in events:
        for qp, pfc in twins:
            if kind == "frame":
                assert qp.on_frame(what, now)      # type: ignore[arg-type]
            elif kind == "pause":
                pfc.on_pause(what, now)            # type: ignore[arg-type]
            else:
                qp.change_sport(what)              # type: ignore[arg-type]
