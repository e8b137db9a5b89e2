"""What a switch sends back, as plain records, and the codecs of the stream messages:
:class:`CounterData`, :class:`PacketIn`, :class:`DigestList`; PacketIn and DigestList
decoded by the P4Info's names, PacketOut and digest acks built.

Example::

    >>> flatten_p4data(p4data_pb2.P4Data(bitstring=b"\\x01\\x02"))
    [258]
    >>> decode_digest_list(None, p4runtime_pb2.DigestList(digest_id=7, list_id=1)).name
    '7'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from p4.v1 import p4data_pb2, p4runtime_pb2

from controller.p4rt.codec import Value, decode, encode
from controller.p4rt.p4info import P4InfoHelper


@dataclass(frozen=True, slots=True)
class CounterData:
    """Packets and bytes of one counter cell.

    >>> CounterData(packets=3, bytes=180).packets
    3
    """

    packets: int
    bytes: int


@dataclass(slots=True)
class PacketIn:
    """A PacketIn: ``payload`` and its ``metadata`` by name (ints).

    >>> PacketIn(b"\\x00", {"ingress_port": 1}).metadata["ingress_port"]
    1
    """

    payload: bytes
    metadata: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class DigestList:
    """One DigestList: the digest's name, list id, and one dict per message (member → int).

    >>> DigestList("flow_sample_t", 1, [{"src_addr": 1}]).data[0]["src_addr"]
    1
    """

    name: str
    list_id: int
    data: list[dict[str, int]]
    timestamp_ns: int = 0


def flatten_p4data(data: p4data_pb2.P4Data) -> list[int]:
    """The bitstrings and bools of a P4Data (structs and tuples flattened, in order) as
    ints; any other kind reads as ``[0]``."""
    kind = data.WhichOneof("data")
    if kind == "bitstring":
        return [decode(data.bitstring)]
    if kind == "struct":
        return [v for m in data.struct.members for v in flatten_p4data(m)]
    if kind == "tuple":
        return [v for m in data.tuple.members for v in flatten_p4data(m)]
    if kind == "bool":
        return [int(data.bool)]
    return [0]


def decode_packet_in(info: Optional[P4InfoHelper], pkt: p4runtime_pb2.PacketIn) -> PacketIn:
    """A PacketIn with its metadata named by the ``packet_in`` header of ``info`` (by id
    when there is no P4Info)."""
    names = info.packet_metadata_names("packet_in") if info else {}
    md = {names.get(m.metadata_id, str(m.metadata_id)): decode(m.value) for m in pkt.metadata}
    return PacketIn(bytes(pkt.payload), md)


def decode_digest_list(info: Optional[P4InfoHelper], dl: p4runtime_pb2.DigestList) -> DigestList:
    """A DigestList with the digest's name and its members' names from ``info``
    (``field_<i>`` when unknown or when the counts differ)."""
    name, fields = str(dl.digest_id), []
    layout = info.digest_layout(dl.digest_id) if info is not None else None
    if layout is not None:
        name, fields = layout
    rows = []
    for d in dl.data:
        values = flatten_p4data(d)
        keys = fields if len(fields) == len(values) else \
            [f"field_{i}" for i in range(len(values))]
        rows.append(dict(zip(keys, values)))
    return DigestList(name, dl.list_id, rows, dl.timestamp)


def packet_out_request(packet_out_header: Any, payload: bytes,
                       metadata: Optional[Mapping[str, Value]] = None
                       ) -> p4runtime_pb2.StreamMessageRequest:
    """A PacketOut with the ``packet_out`` controller metadata (``packet_out_header``, the
    P4Info's ControllerPacketMetadata or None) given by name; fields left out are sent as
    0, since P4Runtime requires every one. Unknown names raise ValueError.

    >>> packet_out_request(None, b"x").packet.payload
    b'x'
    """
    msg = p4runtime_pb2.StreamMessageRequest()
    msg.packet.payload = payload
    given = dict(metadata or {})
    if packet_out_header is not None:
        for m in packet_out_header.metadata:
            msg.packet.metadata.add(metadata_id=m.id,
                                    value=encode(given.pop(m.name, 0), m.bitwidth))
    if given:
        raise ValueError(f"unknown packet_out metadata {sorted(given)}")
    return msg


def digest_ack_request(digest_id: int, list_id: int) -> p4runtime_pb2.StreamMessageRequest:
    """The acknowledgement of one DigestList.

    >>> digest_ack_request(7, 2).digest_ack.list_id
    2
    """
    msg = p4runtime_pb2.StreamMessageRequest()
    msg.digest_ack.digest_id, msg.digest_ack.list_id = digest_id, list_id
    return msg


__all__ = [
    "CounterData", "DigestList", "PacketIn", "decode_digest_list", "decode_packet_in",
    "digest_ack_request", "flatten_p4data", "packet_out_request",
]
