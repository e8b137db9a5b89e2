"""Per-port packet captures in the classic libpcap format (what BMv2 ``--pcap DIR``
writes: ``DIR/<iface>_in.pcap`` and ``DIR/<iface>_out.pcap``; with Mininet interface names
such as ``s1-eth1`` that is ``s1-eth1_in.pcap``).

The Python data plane flushes each record as it is written, so a capture is readable
while the switch runs and complete if it is killed. The native data plane
(``p4sim/native/c/dataplane.c``) writes the same records in the same order into the file
this writer opened, a busy port's gathered for at most 5 ms (``PCAP_FLUSH_US``: one write
per 5 ms per file instead of one per frame, issue 32); everything left is written when the
switch stops, so only a SIGKILL can lose the last 5 ms.

Example::

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> w = PcapWriter(os.path.join(d, "x.pcap"))
    >>> w.write(b"\\x00" * 14, ts_us=1_500_000)
    >>> w.close(); os.path.getsize(os.path.join(d, "x.pcap"))
    54
"""
from __future__ import annotations

import os
import struct
import threading
import time
from typing import Optional

LINKTYPE_ETHERNET = 1
SNAPLEN = 65535
_GLOBAL_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET)
_RECORD = struct.Struct("<IIII")


class PcapWriter:
    """One capture file (microsecond timestamps, Ethernet link type), thread safe."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._f: Optional[object] = open(path, "wb", buffering=0)
        self._f.write(_GLOBAL_HEADER)  # type: ignore[attr-defined]

    def write(self, frame: bytes, ts_us: Optional[int] = None) -> None:
        """Append one frame; ``ts_us`` is wall-clock microseconds (now by default)."""
        if ts_us is None:
            ts_us = time.time_ns() // 1000
        data = frame[:SNAPLEN]
        rec = _RECORD.pack(ts_us // 1_000_000, ts_us % 1_000_000, len(data), len(frame)) + data
        with self._lock:
            if self._f is not None:
                self._f.write(rec)  # type: ignore[attr-defined]

    def fileno(self) -> int:
        """The open file's descriptor (the native data plane appends records to it with
        ``write``/``writev``, the header already written; this writer is unbuffered, so
        nothing is reordered)."""
        if self._f is None:
            raise ValueError(f"{self.path}: closed")
        return self._f.fileno()  # type: ignore[attr-defined]

    def close(self) -> None:
        with self._lock:
            if self._f is not None:
                self._f.close()  # type: ignore[attr-defined]
                self._f = None


class PortCapture:
    """The ``_in`` and ``_out`` captures of one interface.

    Example::

        >>> cap = PortCapture("/tmp", "s1-eth1")      # doctest: +SKIP
        >>> cap.received(frame); cap.sent(frame)     # doctest: +SKIP
    """

    def __init__(self, directory: str, iface: str) -> None:
        os.makedirs(directory, exist_ok=True)
        safe = iface.replace("/", "_")
        self.inbound = PcapWriter(os.path.join(directory, f"{safe}_in.pcap"))
        self.outbound = PcapWriter(os.path.join(directory, f"{safe}_out.pcap"))

    def received(self, frame: bytes) -> None:
        self.inbound.write(frame)

    def sent(self, frame: bytes) -> None:
        self.outbound.write(frame)

    def close(self) -> None:
        self.inbound.close()
        self.outbound.close()


def read_pcap(path: str) -> list[bytes]:
    """The frames of a classic pcap file (tests and tools).

    Example::

        >>> read_pcap("/tmp/s1-eth1_in.pcap")         # doctest: +SKIP
        [b'...']
    """
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    rec = struct.Struct(endian + "IIII")
    frames, off = [], 24
    while off + rec.size <= len(data):
        _s, _u, incl, _orig = rec.unpack_from(data, off)
        off += rec.size
        frames.append(data[off:off + incl])
        off += incl
    return frames
