"""The NIC emulator's metric file (``--metrics-file``): a sender and a receiver over an
in-process cable that drops, corrupts and CE-marks frames; the file's series follow the
NIC's own counters."""
from __future__ import annotations

import doctest
import socket
import threading
import time
from pathlib import Path

import pytest

from controller.telemetry.exposition import parse_metrics
from host.nic import metricsfile
from host.nic.cli import build_parser
from host.nic.frames import FlowSpec
from host.nic.io import DatagramIO, NicPort
from host.nic.metricsfile import MetricsFile, nic_families
from host.nic.qp import Receiver, SenderQP

MESSAGES, MESSAGE_BYTES, MTU = 4, 4096, 1024      # 4 packets a message


def wire() -> tuple[NicPort, NicPort, DatagramIO, DatagramIO]:
    """A sender port, a receiver port, and the two middle ends the test forwards between."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    c, d = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    tx = NicPort(DatagramIO(a), line_rate_bps=1e8)
    rx = NicPort(DatagramIO(d), line_rate_bps=1e8, receiver=Receiver(cnp_interval_s=0.0))
    flow = FlowSpec("02:00:00:00:00:01", "02:00:00:00:01:01", "10.0.0.1", "10.1.0.1", 49152, 7)
    tx.add_sender(SenderQP(flow, message_bytes=MESSAGE_BYTES, mtu=MTU, messages=MESSAGES,
                           react_to_cnp=False))
    return tx, rx, DatagramIO(b), DatagramIO(c)


def values(port: NicPort, nic: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for fam in nic_families(port, nic):
        for s in fam.samples:
            out[(s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k != "nic")))] = s.value
    return out


def test_docstring_examples() -> None:
    result = doctest.testmod(metricsfile, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_series_follow_the_nic_counters_through_loss_corruption_and_marks() -> None:
    tx, rx, near, far = wire()
    data_seen = 0
    t = 0.0
    for _ in range(400):
        t += 0.001
        tx.step(t)
        while (frame := near.recv()) is not None:          # sender → receiver
            data_seen += 1
            if data_seen == 2:
                continue                                   # lost: a PSN gap, one NAK
            if data_seen == 3:
                frame = frame[:-10] + bytes([frame[-10] ^ 0xFF]) + frame[-9:]   # bad ICRC
            elif data_seen == 5:
                frame = frame[:15] + bytes([frame[15] | 0x03]) + frame[16:]    # CE
            far.send(frame)
        rx.step(t)
        while (frame := far.recv()) is not None:           # receiver → sender
            near.send(frame)
        if tx.senders_done:
            break
    assert tx.senders_done
    s, r = values(tx, "b0s0-eth0"), values(rx, "b1s0-eth0")
    rc = rx.receiver.flows[next(iter(rx.receiver.flows))].counters   # type: ignore[union-attr]
    assert s[("astral_nic_tx_packets_total", ())] == tx.tx_frames > MESSAGES * 4
    assert r[("astral_nic_rx_packets_total", ())] == rx.rx_frames
    assert r[("astral_nic_delivered_bytes_total", ())] == MESSAGES * MESSAGE_BYTES
    assert s[("astral_nic_acked_bytes_total", ())] == MESSAGES * MESSAGE_BYTES
    assert r[("astral_nic_icrc_errors_total", ())] == rc.bad_icrc == 1
    assert r[("astral_nic_naks_total", (("direction", "tx"),))] == rc.naks_sent >= 1
    assert s[("astral_nic_naks_total", (("direction", "rx"),))] == rc.naks_sent
    assert r[("astral_nic_cnps_total", (("direction", "tx"),))] == rc.cnps_sent >= 1
    assert s[("astral_nic_cnps_total", (("direction", "rx"),))] == rc.cnps_sent
    assert s[("astral_nic_retransmitted_packets_total", ())] == \
        tx.senders[0].rc.retransmitted_pkts >= 1
    assert s[("astral_nic_qp_state", (("qpn", "7"), ("state", "RTS")))] == 1
    assert s[("astral_nic_qp_state", (("qpn", "7"), ("state", "ERROR")))] == 0
    assert s[("astral_nic_pause_tx_frames_total", ())] == 0
    assert s[("astral_nic_pause_rx_frames_total", ())] == 0
    assert not any(k[0] == "astral_nic_qp_state" for k in r)          # the receiver has no QP


def test_the_file_is_rewritten_every_interval_and_at_stop(tmp_path: Path) -> None:
    tx, _rx, _near, _far = wire()                           # the cable's ends stay open
    path = tmp_path / "b0s0-eth0.prom"
    mf = MetricsFile(path, tx, "b0s0-eth0", interval_s=0.05).start()
    try:
        deadline, pause = time.monotonic() + 10, threading.Event()
        while mf.writes < 3 and time.monotonic() < deadline:
            pause.wait(0.02)
        assert mf.writes >= 3
        tx.step(0.0)                                        # sends: the last write shows it
    finally:
        mf.stop()
    got = {(s.name, tuple(s.labels.items())): s.value for s in parse_metrics(path.read_text())}
    assert got[("astral_nic_tx_packets_total", (("nic", "b0s0-eth0"),))] == tx.tx_frames > 0
    assert not list(tmp_path.glob("*.prom.*"))              # no temporary file left


def test_an_unwritable_path_is_said_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tx, _, _, _ = wire()
    mf = MetricsFile(tmp_path / "absent-dir" / "x.prom", tx, "x")
    mf.write()
    mf.write()
    assert capsys.readouterr().err.count("cannot write the metrics file") == 1
    with pytest.raises(ValueError, match="positive"):
        MetricsFile(tmp_path / "x.prom", tx, "x", interval_s=0)


def test_the_command_line_takes_a_metrics_file() -> None:
    args = build_parser().parse_args(["recv", "--iface", "b1s0-eth0", "--metrics-file", "/tmp/m.prom"])
    assert args.metrics_file == Path("/tmp/m.prom")
    assert build_parser().parse_args(["recv", "--iface", "x"]).metrics_file is None
