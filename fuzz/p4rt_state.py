"""The P4Runtime state a refused write must leave alone, and how to compare it.

:func:`snapshot_request` asks for every table entry (one wildcard), every table's default
entry, every multicast group and clone session, and every digest's configuration: the
state a Write can change and a Read can show (digests: :func:`digest_requests`). Counter cells are left out (packets and
PacketOuts change them). :func:`entity_key` names an entity by what addresses it (table,
match, priority; group id; session id; digest id), with match values as integers, so
that ``b"\\x00\\x05"`` and ``b"\\x05"`` are one key. :func:`changed_keys` lists the keys
whose entity appeared, vanished or changed between two snapshots.

>>> from p4.v1 import p4runtime_pb2 as pb
>>> e = pb.Entity(); e.packet_replication_engine_entry.clone_session_entry.session_id = 5
>>> entity_key(e)
('clone', 5)
>>> changed_keys({("clone", 5): b"a"}, {("clone", 5): b"b", ("mcast", 1): b""})
[('clone', 5), ('mcast', 1)]
"""
from __future__ import annotations

from typing import Iterable, Mapping, Optional

from p4.v1 import p4runtime_pb2 as pb

from fuzz.p4rt_gen import Schema

Key = tuple
Snapshot = dict[Key, bytes]


def snapshot_request(schema: Schema, device_id: int = 0) -> pb.ReadRequest:
    """The Read of everything a Write can change (see the module docstring)."""
    req = pb.ReadRequest(device_id=device_id)
    req.entities.add().table_entry.SetInParent()
    for tid in schema.table_ids:
        req.entities.add().table_entry.CopyFrom(pb.TableEntry(table_id=tid, is_default_action=True))
    req.entities.add().packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
    req.entities.add().packet_replication_engine_entry.clone_session_entry.session_id = 0
    return req


def digest_requests(schema: Schema, device_id: int = 0) -> list[pb.ReadRequest]:
    """One Read per digest: BMv2 answers ``NOT_FOUND`` for a digest not configured (and
    refuses a wildcard), so each is read alone and ``NOT_FOUND`` means absent."""
    out = []
    for did in schema.digest_ids:
        req = pb.ReadRequest(device_id=device_id)
        req.entities.add().digest_entry.digest_id = did
        out.append(req)
    return out


def _int(b: bytes) -> int:
    return int.from_bytes(b, "big")


def _match_key(fm: pb.FieldMatch) -> tuple:
    kind = fm.WhichOneof("field_match_type")
    if kind == "exact":
        return (fm.field_id, kind, _int(fm.exact.value))
    if kind == "lpm":
        return (fm.field_id, kind, _int(fm.lpm.value), fm.lpm.prefix_len)
    if kind == "ternary":
        return (fm.field_id, kind, _int(fm.ternary.value), _int(fm.ternary.mask))
    if kind == "range":
        return (fm.field_id, kind, _int(fm.range.low), _int(fm.range.high))
    if kind == "optional":
        return (fm.field_id, kind, _int(fm.optional.value))
    return (fm.field_id, str(kind))


def entity_key(e: pb.Entity) -> Optional[Key]:
    """What addresses ``e`` (None for entities outside the snapshot: counters, …)."""
    kind = e.WhichOneof("entity")
    if kind == "table_entry":
        te = e.table_entry
        if te.is_default_action:
            return ("default", te.table_id)
        return ("table", te.table_id, te.priority, tuple(sorted(_match_key(m) for m in te.match)))
    if kind == "packet_replication_engine_entry":
        pre = e.packet_replication_engine_entry
        which = pre.WhichOneof("type")
        if which == "multicast_group_entry":
            return ("mcast", pre.multicast_group_entry.multicast_group_id)
        if which == "clone_session_entry":
            return ("clone", pre.clone_session_entry.session_id)
        return None
    if kind == "digest_entry":
        return ("digest", e.digest_entry.digest_id)
    return None


def to_snapshot(entities: Iterable[pb.Entity]) -> Snapshot:
    """``{key: serialized entity}`` of a snapshot Read's entities."""
    out: Snapshot = {}
    for e in entities:
        key = entity_key(e)
        if key is not None:
            out[key] = e.SerializeToString(deterministic=True)
    return out


def changed_keys(before: Mapping[Key, bytes], after: Mapping[Key, bytes]) -> list[Key]:
    """Keys whose entity appeared, vanished or changed (sorted by their text)."""
    return sorted((k for k in set(before) | set(after) if before.get(k) != after.get(k)), key=repr)
