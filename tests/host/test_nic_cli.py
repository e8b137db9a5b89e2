"""The ``python -m host.nic`` command line builds the ports it describes (no raw socket)."""
from __future__ import annotations

import json
import socket

from host.nic.cli import build_parser, make_port
from host.nic.frames import parse_roce
from host.nic.io import DatagramIO


def test_send_and_recv_ports_from_arguments() -> None:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    send = build_parser().parse_args([
        "send", "--iface", "x", "--src-mac", "02:00:00:00:00:01", "--dst-mac",
        "02:00:00:00:01:01", "--src-ip", "10.0.0.1", "--dst-ip", "10.1.0.1",
        "--sport", "49152,49153", "--qpn", "7", "--message-bytes", "2048",
        "--messages", "1", "--line-rate-pps", "1000", "--no-dcqcn"])
    recv = build_parser().parse_args(["recv", "--iface", "y", "--ip", "10.1.0.1",
                                      "--cnp-interval-ms", "2"])
    tx, rx = make_port(send, DatagramIO(a)), make_port(recv, DatagramIO(b))
    assert [qp.flow.sport for qp in tx.senders] == [49152, 49153]
    assert [qp.sqpn for qp in tx.senders] == [7, 8]
    assert tx.senders[0].rp.params.ai_rate_pps == 5.0 and not tx.senders[0].react_to_cnp
    assert rx.receiver is not None and rx.receiver.np.cnp_interval_s == 0.002
    for t in (0.0, 0.001, 0.002):
        tx.step(t)
        rx.step(t)
    assert tx.senders_done
    tx.step(0.003)
    report = json.loads(json.dumps(rx.report(0.003)))
    assert [f["recv_pkts"] for f in report["flows"]] == [2, 2]
    assert [f["acked_messages"] for f in tx.report(0.003)["flows"]] == [1, 1]
    assert parse_roce(tx.senders[0].poll(1.0) or b"") is None     # done: nothing more
