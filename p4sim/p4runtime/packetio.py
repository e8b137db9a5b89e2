"""Packet I/O: P4Runtime ``PacketOut`` / ``PacketIn`` ↔ frames on the CPU port.

A program may declare ``@controller_header("packet_out")`` and
``@controller_header("packet_in")`` headers; P4Info lists their fields
(``controller_packet_metadata``) with ids and bit widths. A ``PacketOut`` becomes
``packet_out header (fields packed MSB-first, in declaration order) + payload``; a frame
the pipeline sends to the CPU port loses its leading ``packet_in`` header, whose fields
become ``PacketIn.metadata`` (canonical bytestrings). Without such a header the payload
travels as is.

A metadata field the ``PacketOut`` leaves out is 0, as BMv2 injects it; an unknown or
repeated field, or a value that does not fit, raises
``RuntimeStateError("INVALID_ARGUMENT" | "OUT_OF_RANGE", …)`` and the packet is dropped
(BMv2 drops it silently; the server reports a ``StreamError`` only with the extras).

Example::

    >>> info = p4info_pb2.P4Info()
    >>> h = info.controller_packet_metadata.add(); h.preamble.name = "packet_out"
    >>> m = h.metadata.add(); m.id, m.name, m.bitwidth = 1, "egress_port", 9
    >>> m = h.metadata.add(); m.id, m.name, m.bitwidth = 2, "_pad", 7
    >>> pio = PacketIO(info)
    >>> out = p4runtime_pb2.PacketOut(payload=b"\\xaa")
    >>> _ = out.metadata.add(metadata_id=1, value=b"\\x03"), out.metadata.add(metadata_id=2, value=b"\\x00")
    >>> pio.packet_out_frame(out).hex()
    '0180aa'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4sim.p4runtime.codec import decode_bytes, encode_bytes
from p4sim.runtime.errors import RuntimeStateError


@dataclass(frozen=True, slots=True)
class ControllerHeader:
    """Layout of a @controller_header header: ``fields`` = [(id, name, bitwidth)]."""

    name: str
    fields: tuple[tuple[int, str, int], ...]

    @property
    def width_bits(self) -> int:
        return sum(w for _, _, w in self.fields)

    @staticmethod
    def from_p4info(info: p4info_pb2.P4Info, name: str) -> Optional["ControllerHeader"]:
        """The header named ``name`` ("packet_in" / "packet_out"), None if absent."""
        for cpm in info.controller_packet_metadata:
            if cpm.preamble.name == name:
                return ControllerHeader(name, tuple((m.id, m.name, m.bitwidth) for m in cpm.metadata))
        return None


class PacketIO:
    """Translation between P4Runtime packet messages and frames, for one P4Info."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.packet_out = ControllerHeader.from_p4info(p4info, "packet_out")
        self.packet_in = ControllerHeader.from_p4info(p4info, "packet_in")

    def packet_out_frame(self, msg: p4runtime_pb2.PacketOut) -> bytes:
        """The frame to inject on the CPU port; raises RuntimeStateError."""
        hdr = self.packet_out
        if hdr is None:
            if msg.metadata:
                raise RuntimeStateError("INVALID_ARGUMENT",
                                        "PacketOut has metadata but the program has no packet_out header")
            return bytes(msg.payload)
        given: dict[int, bytes] = {}
        for md in msg.metadata:
            if md.metadata_id in given:
                raise RuntimeStateError("INVALID_ARGUMENT", f"PacketOut metadata id {md.metadata_id} repeated")
            given[md.metadata_id] = md.value
        known = {fid for fid, _, _ in hdr.fields}
        unknown = sorted(set(given) - known)
        if unknown:
            raise RuntimeStateError("INVALID_ARGUMENT", f"PacketOut metadata id {unknown[0]} is not in packet_out")
        acc = 0
        for fid, fname, width in hdr.fields:
            value = decode_bytes(given[fid], width, f"packet_out.{fname}") if fid in given else 0
            acc = (acc << width) | value
        total = hdr.width_bits
        pad = (-total) % 8  # a header is whole bytes; keep the packing MSB-first anyway
        nbytes = (total + pad) // 8
        return (acc << pad).to_bytes(nbytes, "big") + bytes(msg.payload)

    def packet_in_message(self, frame: bytes) -> p4runtime_pb2.PacketIn:
        """The ``PacketIn`` for a frame that left through the CPU port."""
        msg = p4runtime_pb2.PacketIn()
        hdr = self.packet_in
        if hdr is None:
            msg.payload = frame
            return msg
        total = hdr.width_bits
        nbytes = (total + 7) // 8
        if len(frame) < nbytes:
            msg.payload = frame  # too short to carry the header: deliver it raw
            return msg
        acc = int.from_bytes(frame[:nbytes], "big") >> (nbytes * 8 - total)
        shift = total
        for fid, _, width in hdr.fields:
            shift -= width
            value = (acc >> shift) & ((1 << width) - 1)
            msg.metadata.add(metadata_id=fid, value=encode_bytes(value, width))
        msg.payload = frame[nbytes:]
        return msg
