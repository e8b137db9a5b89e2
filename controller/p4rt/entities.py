"""Builders of P4Runtime entities from names (resolved through a :class:`P4InfoHelper`).

Match values by the field's match kind in the P4Info: exact/optional ``value``; lpm
``(value, prefix_len)`` or ``"10.0.0.0/8"``; ternary ``(value, mask)``; range ``(lo, hi)``.
Fields left out are wildcards (allowed for lpm/ternary/range/optional only).

Example::

    >>> te = table_entry(info, "FabricIngress.forwarding.routes",      # doctest: +SKIP
    ...                  match={"hdr.ipv4.dst_addr": ("10.1.0.0", 16)},
    ...                  action="set_ecmp_group", params={"group_id": 1})
    >>> upd = update(te, "INSERT")                                      # doctest: +SKIP
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.p4rt.codec import Value, encode, prefix_mask, to_int
from controller.p4rt.p4info import P4InfoHelper

MatchValue = Union[Value, tuple[Value, Value]]
UPDATE_TYPES = {"INSERT": p4runtime_pb2.Update.INSERT, "MODIFY": p4runtime_pb2.Update.MODIFY,
                "DELETE": p4runtime_pb2.Update.DELETE}
_MT = p4info_pb2.MatchField


def field_match(info: P4InfoHelper, table: str, field: str,
                value: MatchValue) -> p4runtime_pb2.FieldMatch:
    """One FieldMatch of ``table`` for ``value`` given in the forms of the module doc.

    >>> field_match(info, "routes", "hdr.ipv4.dst_addr", "10.0.0.0/8")  # doctest: +SKIP
    """
    mf = info.match_field(table, field)
    width = mf.bitwidth
    fm = p4runtime_pb2.FieldMatch(field_id=mf.id)
    kind = mf.match_type
    if kind == _MT.EXACT:
        fm.exact.value = encode(_scalar(value), width)
    elif kind == _MT.LPM:
        if isinstance(value, str) and "/" in value:
            addr, plen = value.split("/")
            v, p = to_int(addr), int(plen)
        elif isinstance(value, tuple):
            v, p = to_int(value[0]), int(to_int(value[1]))
        else:
            v, p = to_int(value), width
        fm.lpm.value = encode(v & prefix_mask(p, width), width)
        fm.lpm.prefix_len = p
    elif kind == _MT.TERNARY:
        v, m = (to_int(value[0]), to_int(value[1])) if isinstance(value, tuple) \
            else (to_int(value), (1 << width) - 1)
        fm.ternary.value = encode(v & m, width)
        fm.ternary.mask = encode(m, width)
    elif kind == _MT.RANGE:
        lo, hi = (value if isinstance(value, tuple) else (value, value))
        fm.range.low = encode(lo, width)
        fm.range.high = encode(hi, width)
    elif kind == _MT.OPTIONAL:
        fm.optional.value = encode(_scalar(value), width)
    else:
        raise ValueError(f"unsupported match kind {kind} of {table}.{field}")
    return fm


def _scalar(value: MatchValue) -> Value:
    if isinstance(value, tuple):
        raise ValueError(f"a single value is expected, not {value!r}")
    return value


def action(info: P4InfoHelper, name: str,
           params: Optional[Mapping[str, Value]] = None) -> p4runtime_pb2.Action:
    """An Action with its parameters by name (every parameter must be given).

    >>> action(info, "route_to", {"port": 2, "src_mac": 1, "dst_mac": 2})  # doctest: +SKIP
    """
    a = info.get("action", name)
    given = dict(params or {})
    msg = p4runtime_pb2.Action(action_id=a.preamble.id)
    for p in a.params:
        if p.name not in given:
            raise ValueError(f"action {a.preamble.name}: parameter {p.name} missing")
        msg.params.add(param_id=p.id, value=encode(given.pop(p.name), p.bitwidth))
    if given:
        raise ValueError(f"action {a.preamble.name}: unknown parameters {sorted(given)}")
    return msg


def table_entry(info: P4InfoHelper, table: str,
                match: Optional[Mapping[str, MatchValue]] = None,
                action_name: Optional[str] = None,
                params: Optional[Mapping[str, Value]] = None, priority: int = 0,
                is_default: bool = False) -> p4runtime_pb2.TableEntry:
    """A TableEntry; with ``action_name=None`` and no match it is a read wildcard.

    >>> table_entry(info, "ecmp.groups", {"meta.ecmp_group_id": 1},   # doctest: +SKIP
    ...             "select_member", {"base": 0, "size": 2})
    """
    te = p4runtime_pb2.TableEntry(table_id=info.table_id(table), priority=priority)
    for field, value in (match or {}).items():
        te.match.append(field_match(info, table, field, value))
    if action_name is not None:
        te.action.action.CopyFrom(action(info, action_name, params))
    if is_default:
        te.is_default_action = True
    return te


def update(entity_msg: Any, kind: str = "INSERT") -> p4runtime_pb2.Update:
    """An Update of ``kind`` (INSERT/MODIFY/DELETE) for an entity or a concrete entity
    message (TableEntry, RegisterEntry, PacketReplicationEngineEntry, DigestEntry, …).

    >>> update(p4runtime_pb2.TableEntry(table_id=1)).type == p4runtime_pb2.Update.INSERT
    True
    """
    upd = p4runtime_pb2.Update(type=UPDATE_TYPES[kind.upper()])
    upd.entity.CopyFrom(entity(entity_msg))
    return upd


_ENTITY_FIELDS = {
    p4runtime_pb2.TableEntry: "table_entry",
    p4runtime_pb2.CounterEntry: "counter_entry",
    p4runtime_pb2.DirectCounterEntry: "direct_counter_entry",
    p4runtime_pb2.MeterEntry: "meter_entry",
    p4runtime_pb2.RegisterEntry: "register_entry",
    p4runtime_pb2.PacketReplicationEngineEntry: "packet_replication_engine_entry",
    p4runtime_pb2.DigestEntry: "digest_entry",
    p4runtime_pb2.ActionProfileMember: "action_profile_member",
    p4runtime_pb2.ActionProfileGroup: "action_profile_group",
}


def entity(msg: Any) -> p4runtime_pb2.Entity:
    """Wrap a concrete entity message in an Entity (an Entity is returned as is).

    >>> entity(p4runtime_pb2.RegisterEntry(register_id=5)).register_entry.register_id
    5
    """
    if isinstance(msg, p4runtime_pb2.Entity):
        return msg
    ent = p4runtime_pb2.Entity()
    getattr(ent, _ENTITY_FIELDS[type(msg)]).CopyFrom(msg)
    return ent


def counter_entry(info: P4InfoHelper, counter: str,
                  index: Optional[int] = None) -> p4runtime_pb2.CounterEntry:
    """A CounterEntry (``index=None`` reads every cell)."""
    ce = p4runtime_pb2.CounterEntry(counter_id=info.counter_id(counter))
    if index is not None:
        ce.index.index = index
    return ce


def meter_entry(info: P4InfoHelper, meter: str, index: Optional[int] = None,
                config: Optional[tuple[int, int, int, int]] = None) -> p4runtime_pb2.MeterEntry:
    """A MeterEntry of an indexed meter (``index=None`` reads every cell); ``config``
    ``(cir, cburst, pir, pburst)`` for a MODIFY (rates in units per second, bursts in
    units; none: the cell back to unconfigured, every packet GREEN). BMv2 writes a meter
    cell only by index (no INSERT, no wildcard write)."""
    me = p4runtime_pb2.MeterEntry(meter_id=info.meter_id(meter))
    if index is not None:
        me.index.index = index
    if config is not None:
        me.config.cir, me.config.cburst, me.config.pir, me.config.pburst = config
    return me


def register_entry(info: P4InfoHelper, register: str, index: Optional[int] = None,
                   value: Optional[Value] = None) -> p4runtime_pb2.RegisterEntry:
    """A RegisterEntry (``index=None`` reads every cell; ``value`` for writes)."""
    reg = info.get("register", register)
    re_ = p4runtime_pb2.RegisterEntry(register_id=reg.preamble.id)
    if index is not None:
        re_.index.index = index
    if value is not None:
        width = reg.type_spec.bitstring.bit.bitwidth or 32
        re_.data.bitstring = encode(value, width)
    return re_


def multicast_group(group_id: int, replicas: Sequence[Union[int, tuple[int, int]]]
                    ) -> p4runtime_pb2.PacketReplicationEngineEntry:
    """A multicast group; replicas are ports or (port, instance) pairs.

    >>> len(multicast_group(1, [1, (2, 1)]).multicast_group_entry.replicas)
    2
    """
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    g = pre.multicast_group_entry
    g.multicast_group_id = group_id
    for r in replicas:
        port, inst = (r, 0) if isinstance(r, int) else r
        g.replicas.add(egress_port=port, instance=inst)
    return pre


def clone_session(session_id: int, replicas: Sequence[Union[int, tuple[int, int]]],
                  class_of_service: int = 0,
                  packet_length_bytes: int = 0) -> p4runtime_pb2.PacketReplicationEngineEntry:
    """A clone session; replicas are ports or (port, instance) pairs.

    >>> clone_session(100, [3]).clone_session_entry.replicas[0].egress_port
    3
    """
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    c = pre.clone_session_entry
    c.session_id, c.class_of_service = session_id, class_of_service
    c.packet_length_bytes = packet_length_bytes
    for r in replicas:
        port, inst = (r, 0) if isinstance(r, int) else r
        c.replicas.add(egress_port=port, instance=inst)
    return pre


def digest_entry(info: P4InfoHelper, digest: str, max_timeout_ns: int = 0,
                 max_list_size: int = 1,
                 ack_timeout_ns: int = 1_000_000_000) -> p4runtime_pb2.DigestEntry:
    """A DigestEntry enabling ``digest`` (one message per list by default)."""
    de = p4runtime_pb2.DigestEntry(digest_id=info.digest_id(digest))
    de.config.max_timeout_ns = max_timeout_ns
    de.config.max_list_size = max_list_size
    de.config.ack_timeout_ns = ack_timeout_ns
    return de
