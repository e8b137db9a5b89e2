"""Hold the RoCEv2 UDP port on the NIC's addresses so that the host's kernel stays quiet.

The emulated NIC sends and receives frames on a raw socket, but the kernel of its host sees
every received frame too. Without a socket bound to UDP 4791 it answers each RoCEv2 data
packet, ACK and CNP with an ICMP port unreachable: noise on the fabric's counters, and not
what a real RNIC does (it consumes RoCEv2 before the kernel). ``python -m host.nic
send|recv`` therefore binds a UDP socket to ``(address, 4791)`` (``--hold-port``) on each
of the NIC's addresses for the life of the process. The socket reads nothing: a
one-instruction classic BPF filter (``ret #0``) attached to it makes the kernel discard
every datagram before it is queued, so the socket never fills and costs no CPU.

Sockets are bound with SO_REUSEADDR, so the sender and the receiver of one NIC (both
directions of a flow on one host) can hold the port together. A port another socket
already holds without SO_REUSEADDR (e.g. ``testbed.traffic``'s RoCE sink) is reported as
``"in use"``: the kernel is quiet all the same.

>>> with UdpPortHold(["127.0.0.1"], port=0) as hold:
...     list(hold.status.values())
['held']
>>> hold.sockets
[]
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import socket
import struct
from types import TracebackType
from typing import Optional, Sequence

from host.nic.frames import ROCE_UDP_PORT

SO_ATTACH_FILTER = 26
BPF_RET_K = 0x06                 # BPF_RET | BPF_K: accept K bytes (0 = drop)
SIOCGIFADDR = 0x8915
HOLD_RCVBUF_BYTES = 4096
HELD = "held"
IN_USE = "in use"


def attach_drop_all(sock: socket.socket) -> None:
    """Attach the classic BPF program ``ret #0`` to ``sock``: the kernel drops every packet.

    >>> s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); attach_drop_all(s); s.close()
    """
    insn = ctypes.create_string_buffer(struct.pack("HBBI", BPF_RET_K, 0, 0, 0))
    prog = struct.pack("HL", 1, ctypes.addressof(insn))       # struct sock_fprog
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, prog)


def iface_ipv4(iface: str) -> Optional[str]:
    """The primary IPv4 address of ``iface`` (SIOCGIFADDR), None when it has none.

    >>> iface_ipv4("lo")
    '127.0.0.1'
    """
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            req = fcntl.ioctl(s.fileno(), SIOCGIFADDR, struct.pack("256s", iface.encode()[:15]))
        except OSError:
            return None
    return socket.inet_ntoa(req[20:24])


class UdpPortHold:
    """UDP sockets bound to ``port`` on each of ``ips``, discarding what they receive.

    ``status`` maps ``"ip:port"`` to ``"held"``, ``"in use"`` (another socket holds it)
    or ``"error: …"``; ``port=0`` binds a free port (tests). :meth:`close` releases them.

    >>> hold = UdpPortHold(["127.0.0.1"], port=0); n = len(hold.sockets); hold.close()
    >>> n, hold.sockets
    (1, [])
    """

    def __init__(self, ips: Sequence[str], port: int = ROCE_UDP_PORT) -> None:
        self.port = port
        self.sockets: list[socket.socket] = []
        self.status: dict[str, str] = {}
        for ip in dict.fromkeys(ips):
            self.status[f"{ip}:{port}"] = self._bind(ip)

    def _bind(self, ip: str) -> str:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, HOLD_RCVBUF_BYTES)
            try:
                attach_drop_all(sock)
            except OSError:
                pass                     # the small buffer fills, then the kernel drops
            sock.bind((ip, self.port))
        except OSError as exc:
            sock.close()
            return IN_USE if exc.errno == errno.EADDRINUSE else f"error: {exc}"
        self.sockets.append(sock)
        return HELD

    @property
    def bound_ports(self) -> list[tuple[str, int]]:
        """The ``(ip, port)`` each held socket is bound to (the real port when ``port=0``)."""
        return [s.getsockname() for s in self.sockets]

    def close(self) -> None:
        """Release every socket."""
        for sock in self.sockets:
            sock.close()
        self.sockets.clear()

    def __enter__(self) -> "UdpPortHold":
        return self

    def __exit__(self, t: Optional[type[BaseException]], e: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()


__all__ = ["HELD", "IN_USE", "UdpPortHold", "attach_drop_all", "iface_ipv4"]
