"""The sizes a sender may be given, checked once where they enter: ``SenderQP`` (the API),
``NicPort.add_sender`` (the link's MTU) and ``python -m host.nic send`` (its flags).

* **Message** (``message_bytes``, ``--message-bytes``): an integer from 1 to
  :data:`MAX_MESSAGE_BYTES`, 2^31 bytes, the InfiniBand architecture's largest message
  (IBTA, InfiniBand Architecture Specification Vol. 1: a message is 0 to 2^31 bytes; Linux rxe
  advertises the same, ``RXE_PORT_MAX_MSG_SZ = (1UL << 31)`` in drivers/infiniband/sw/rxe/rxe_param.h).
  Zero is refused: the emulator paces, counts and acknowledges payload packets, and a
  message without one has nothing to pace.
* **Payload per packet** (``mtu``, ``--mtu``): an integer from 1 to what one IPv4 packet
  carries after the data frame's headers, :data:`DATA_HEADER_BYTES` (IPv4 20, UDP 8, BTH 12,
  RETH 16, ICRC 4) and the BTH's pad to 4 bytes: :func:`max_payload_bytes`. Without a link
  the bound is IPv4's 65,535-byte total length (:data:`MAX_PAYLOAD_BYTES`); on a link it is
  the link's MTU (:func:`check_fits_link`): a larger frame is refused by the kernel
  (EMSGSIZE) at every send, so the QP would retry until it went to error.
* **Messages** (``messages``, ``--messages``): None (the API) or 0 (the flag) to send until
  the end, else a positive integer.

``bool`` is not taken for an integer (``True`` is 1 to Python, not a size).

>>> check_send_size(65536, 1024, None)
>>> check_send_size(0, 1024, None)
Traceback (most recent call last):
ValueError: message_bytes 0: not positive (a message carries at least one byte)
>>> max_payload_bytes(1500)
1440
"""
from __future__ import annotations

import fcntl
import socket
import struct
from typing import Any, Optional

from host.nic.frames import BTH_LEN, ICRC_LEN, IPV4_LEN, RETH_LEN, UDP_LEN

MAX_MESSAGE_BYTES = 1 << 31
"""The largest RDMA message, 2^31 bytes (see the module docstring)."""
DATA_HEADER_BYTES = IPV4_LEN + UDP_LEN + BTH_LEN + RETH_LEN + ICRC_LEN
"""IPv4 bytes of a data frame that are not payload (a FIRST or ONLY frame: with its RETH)."""
IPV4_MAX_BYTES = 0xFFFF
"""IPv4's total length field: the largest packet."""
SIOCGIFMTU = 0x8921


def max_payload_bytes(l3_mtu: int) -> int:
    """The largest ``mtu`` (payload bytes per packet) whose data frames fit an IPv4 MTU of
    ``l3_mtu`` bytes: the headers, then the payload padded to 4 bytes.

    >>> max_payload_bytes(1500), max_payload_bytes(IPV4_MAX_BYTES)
    (1440, 65472)
    """
    return max(0, (l3_mtu - DATA_HEADER_BYTES) // 4 * 4)


MAX_PAYLOAD_BYTES = max_payload_bytes(IPV4_MAX_BYTES)
"""The largest ``mtu`` without a link: one IPv4 packet's (65,472 bytes)."""


def _integer(field: str, value: Any) -> int:
    """``value`` if it is an integer (not a bool), else ValueError naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{field} {value!r}: not an integer")
    return value


def check_message_bytes(message_bytes: Any, field: str = "message_bytes") -> None:
    """ValueError naming ``field`` unless ``message_bytes`` is an integer in 1..2^31.

    >>> check_message_bytes(1 << 32, "--message-bytes")
    Traceback (most recent call last):
    ValueError: --message-bytes 4294967296: above 2147483648, RDMA's largest message (2^31 bytes)
    """
    if _integer(field, message_bytes) <= 0:
        raise ValueError(f"{field} {message_bytes}: not positive (a message carries at least one byte)")
    if message_bytes > MAX_MESSAGE_BYTES:
        raise ValueError(f"{field} {message_bytes}: above {MAX_MESSAGE_BYTES}, RDMA's largest "
                         "message (2^31 bytes)")


def check_mtu(mtu: Any, field: str = "mtu") -> None:
    """ValueError naming ``field`` unless ``mtu`` (payload bytes per packet) is an integer
    in 1..:data:`MAX_PAYLOAD_BYTES`.

    >>> check_mtu(-1, "--mtu")
    Traceback (most recent call last):
    ValueError: --mtu -1: not positive (payload bytes per packet)
    """
    if _integer(field, mtu) <= 0:
        raise ValueError(f"{field} {mtu}: not positive (payload bytes per packet)")
    if mtu > MAX_PAYLOAD_BYTES:
        raise ValueError(f"{field} {mtu}: above {MAX_PAYLOAD_BYTES}, the most payload one IPv4 packet "
                         f"carries after {DATA_HEADER_BYTES} bytes of IPv4, UDP, BTH, RETH and ICRC headers")


def check_send_size(message_bytes: Any, mtu: Any, messages: Any = None) -> None:
    """ValueError naming the field when a sender's sizes are out of bounds (see the module
    docstring); None when they are fine.

    >>> check_send_size(4096, 1024, 3)
    >>> check_send_size(4096, 65473, None)
    Traceback (most recent call last):
    ValueError: mtu 65473: above 65472, the most payload one IPv4 packet carries after 60 bytes of IPv4, UDP, BTH, RETH and ICRC headers
    >>> check_send_size(4096.0, 1024)
    Traceback (most recent call last):
    ValueError: message_bytes 4096.0: not an integer
    """
    check_message_bytes(message_bytes)
    check_mtu(mtu)
    if messages is not None and _integer("messages", messages) <= 0:
        raise ValueError(f"messages {messages}: not positive (None: send until the end)")


def iface_mtu(iface: str) -> Optional[int]:
    """The MTU of ``iface`` in this network namespace (``SIOCGIFMTU``; not sysfs, whose view
    is the namespace it was mounted in), None when there is no such interface.

    >>> iface_mtu("lo") > 0, iface_mtu("no-such-if0")
    (True, None)
    """
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            req = fcntl.ioctl(s.fileno(), SIOCGIFMTU, struct.pack("16si12x", iface.encode()[:15], 0))
        except OSError:
            return None
    return int(struct.unpack_from("16si", req)[1])


def check_fits_link(mtu: int, iface: str, l3_mtu: Optional[int], field: str = "mtu") -> None:
    """ValueError naming ``field`` when data frames of ``mtu`` payload bytes do not fit
    ``iface``'s MTU ``l3_mtu`` (None: unknown, not checked).

    >>> check_fits_link(1024, "h-eth0", 1500)
    >>> check_fits_link(1500, "h-eth0", 1500, field="--mtu")
    Traceback (most recent call last):
    ValueError: --mtu 1500: h-eth0's MTU is 1500 bytes, which carries at most 1440 payload bytes a packet after 60 bytes of IPv4, UDP, BTH, RETH and ICRC headers
    """
    if l3_mtu is None:
        return
    most = max_payload_bytes(l3_mtu)
    if mtu > most:
        raise ValueError(f"{field} {mtu}: {iface}'s MTU is {l3_mtu} bytes, which carries at most {most} "
                         f"payload bytes a packet after {DATA_HEADER_BYTES} bytes of IPv4, UDP, BTH, RETH "
                         "and ICRC headers")


__all__ = ["DATA_HEADER_BYTES", "MAX_MESSAGE_BYTES", "MAX_PAYLOAD_BYTES", "check_fits_link",
           "check_message_bytes", "check_mtu", "check_send_size", "iface_mtu", "max_payload_bytes"]
