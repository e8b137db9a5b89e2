"""The NIC emulator's send sizes (host/nic/sendsize.py): the API (``SenderQP``,
``NicPort.add_sender``) and ``python -m host.nic send`` refuse a message size or payload
per packet that is not an integer, not positive, above RDMA's 2^31-byte message or above
what the link's MTU carries, with an error naming the field (the CLI: exit 2, one line,
no traceback). Before, ``--mtu 1500`` on a 1500-byte link sent frames the kernel refused
one by one, and ``--messages -1`` made a QP with a negative packet total."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import host.nic.io as nic_io
from host.nic import cli
from host.nic.frames import FlowSpec
from host.nic.io import NicPort, PacketSocket
from host.nic.qp import SenderQP
from host.nic.sendsize import MAX_MESSAGE_BYTES, MAX_PAYLOAD_BYTES

ROOT = Path(__file__).resolve().parents[2]
FLOW = FlowSpec("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.1.0.1", 49152, 7)
SEND = ["send", "--iface", "lo", "--dst-mac", "02:00:00:00:00:02", "--src-ip", "127.0.0.1",
        "--dst-ip", "127.0.0.2", "--sport", "49152", "--hold-port", "0", "--duration-s", "0.1"]


@pytest.mark.parametrize("kwargs, field, why", [
    (dict(message_bytes=0), "message_bytes 0", "not positive"),
    (dict(message_bytes=-4096), "message_bytes -4096", "not positive"),
    (dict(message_bytes=MAX_MESSAGE_BYTES + 1), "message_bytes 2147483649", "largest message"),
    (dict(message_bytes=4096.5), "message_bytes 4096.5", "not an integer"),
    (dict(message_bytes=True), "message_bytes True", "not an integer"),
    (dict(mtu=0), "mtu 0", "not positive"),
    (dict(mtu=MAX_PAYLOAD_BYTES + 1), "mtu 65473", "one IPv4 packet"),
    (dict(mtu="1024"), "mtu '1024'", "not an integer"),
    (dict(messages=0), "messages 0", "not positive"),
    (dict(messages=-1), "messages -1", "not positive"),
])
def test_sender_qp_refuses_bad_sizes_naming_the_field(kwargs: dict[str, Any], field: str, why: str) -> None:
    args: dict[str, Any] = dict(message_bytes=4096, mtu=1024, messages=None, rate_limit=False)
    args.update(kwargs)
    with pytest.raises(ValueError, match=why) as exc:
        SenderQP(FLOW, **args)
    assert str(exc.value).startswith(field + ":")


def test_the_bounds_themselves_are_taken() -> None:
    qp = SenderQP(FLOW, message_bytes=MAX_MESSAGE_BYTES, mtu=MAX_PAYLOAD_BYTES, messages=1, rate_limit=False)
    assert qp.native_frame_bytes() == 14 + 65532          # Ethernet + the largest IPv4 packet, padded
    assert SenderQP(FLOW, message_bytes=1, mtu=1, rate_limit=False).message_bytes == 1


@pytest.mark.parametrize("flags, says", [
    (["--message-bytes", "0"], "--message-bytes 0: not positive"),
    (["--message-bytes", "-1"], "--message-bytes -1: not positive"),
    (["--message-bytes", str(1 << 32)], "--message-bytes 4294967296: above 2147483648"),
    (["--mtu", "0"], "--mtu 0: not positive"),
    (["--mtu", "70000"], "--mtu 70000: above 65472"),
    (["--messages", "-2"], "--messages -2: negative"),
    (["--window-pkts", "-1"], "--window-pkts -1: negative"),
])
def test_cli_refuses_bad_sizes_before_opening_anything(flags: list[str], says: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(SEND + flags) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"host.nic send: {says}") and err.count("\n") == 1, err


def test_cli_not_an_integer_exits_2_without_a_traceback() -> None:
    """The real command: argparse names the flag; exit 2."""
    proc = subprocess.run([sys.executable, "-m", "host.nic", *SEND, "--message-bytes", "1.5"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "argument --message-bytes: invalid int value: '1.5'" in proc.stderr
    assert "Traceback" not in proc.stderr


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="an AF_PACKET socket needs CAP_NET_RAW")


@needs_root
def test_a_link_refuses_frames_larger_than_its_mtu(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a 1500-byte link (``lo``'s MTU read as 1500) a QP with 1441 payload bytes a packet
    is refused by ``NicPort.add_sender``, 1440 is taken; the CLI says ``--mtu``."""
    monkeypatch.setattr(nic_io, "iface_mtu", lambda iface: 1500)
    sock = PacketSocket("lo")
    try:
        assert nic_io.link_mtus(sock) == [("lo", 1500)]
        port = NicPort(sock, line_rate_bps=1e8)
        with pytest.raises(ValueError, match="mtu 1441: lo's MTU is 1500 bytes, which carries at most 1440"):
            port.add_sender(SenderQP(FLOW, message_bytes=4096, mtu=1441, rate_limit=False))
        assert port.senders == []
        port.add_sender(SenderQP(FLOW, message_bytes=4096, mtu=1440, rate_limit=False))
        assert len(port.senders) == 1
    finally:
        sock.close()


@needs_root
def test_cli_refuses_an_mtu_the_link_cannot_carry(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(nic_io, "iface_mtu", lambda iface: 1500)
    assert cli.main(SEND + ["--mtu", "1500"]) == 2
    err = capsys.readouterr().err
    assert err == ("host.nic send: --mtu 1500: lo's MTU is 1500 bytes, which carries at most 1440 "
                   "payload bytes a packet after 60 bytes of IPv4, UDP, BTH, RETH and ICRC headers\n")
