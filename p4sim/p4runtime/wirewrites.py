"""Table-entry updates of a WriteRequest read straight from its wire bytes.

A batched INSERT spent ~3 µs of its ~6 in upb's accessors: every sub-message read
(``upd.entity``, ``.table_entry``, ``.match[0]``, ``.exact``, ``.action``) makes a Python
wrapper of 0.3–0.6 µs, and the fast path reads about ten of them an update. A walk of
the bytes in plain Python costs as much (~3 µs: a byte at a time), so this module does
not parse: it *compares*. An update to a table with one match field, exact (MAC, port,
id and next-hop tables: the plans' ``single_exact``) or LPM (route tables:
``single_lpm``), that sets only the table id, that field and an action is, byte for
byte, a fixed head (the update type, the table and field ids and the nested lengths,
which follow from the value's length and the update's), the value, for LPM the prefix
length's key and one byte, then ``TableAction`` as its own bytes. :class:`WireShapes`
builds each head once with a small encoder of its own and checks an update with one
``bytes.startswith``; the value and the action's bytes are then slices. What the bytes
mean is then exactly what the head says: they *are* the canonical encoding of that
message, nothing left out or added. A table of several exact fields (the plans'
``multi_exact``: ``(dst, etype)``-like tables) is read the same way piece by piece
(:class:`_MultiShape`): an outer head with the table id, then each field's FieldMatch
head and value, in the P4Info's order, every nested length checked.

Anything else gives None for that update, which then takes the message path, unchanged:
another entity or table, a second match field of a one-field table, fields of a
multi-field table in another order, left out or given twice, a priority, metadata, an idle timeout,
``is_const`` or any other field, an update or action of 128 bytes or more, a prefix
length of 0 or of 128 or more, a varint not in its shortest form. The table's plan checks and canonicalises a :data:`WireEntry` as it
does the message (:meth:`TablePlan.wire_insert`, ``wire_modify``, ``wire_delete``), so
both give the same key, the same call and the same refusals
(tests/p4sim/p4runtime/test_wire_writes.py and test_wire_writes_multi.py compare both
on valid and invalid batches). The server feeds this the bytes the request was received
as (its Write handler gets them from gRPC unparsed), or upb's own encoding of a request
given to it parsed (``SerializeToString``: ~0.2 µs an update). A client's bytes need not
come in upb's field order: an update that differs from the canonical encoding of its
message matches no head (None), and updates that are not one run of fields make the
whole request None.

Field numbers (``_T_*``) are read from the generated descriptors, not written here.

Example::

    >>> from p4.v1 import p4runtime_pb2 as pb
    >>> req = pb.WriteRequest(device_id=1)
    >>> te = req.updates.add(type=pb.Update.INSERT).entity.table_entry
    >>> te.table_id = 7
    >>> te.match.add(field_id=1).exact.value = b"\\x0a"
    >>> te.action.action.action_id = 3
    >>> [w] = parse_updates(req.SerializeToString(), 1, WireShapes({7: (1, False)}))
    >>> w[:3], w[3] == te.action.SerializeToString(), w[4]
    ((1, 7, b'\\n'), True, -1)
"""
from __future__ import annotations

from typing import Optional, Union

from p4.v1 import p4runtime_pb2 as pb

from p4sim.p4runtime.wireformat import WIRE_LEN as _LEN, WIRE_VARINT as _VARINT, field_key as _tag
from p4sim.p4runtime.wireformat import length_delimited as _field, read_length as _length, varint


WireEntry = tuple[int, int, Union[bytes, tuple[bytes, ...]], Optional[bytes], int]
"""(update type, table id, the match field's value, the serialized TableAction or None
when the entry has none, the LPM prefix length or -1 for an exact field): an update
whose TableEntry sets nothing else. For a table of several exact fields
(:class:`_MultiShape`) the value is a tuple, one value per field in the P4Info's order."""


_T_UPDATES = _tag(pb.WriteRequest, "updates", _LEN)
_T_TYPE = _tag(pb.Update, "type", _VARINT)
_T_ENTITY = _tag(pb.Update, "entity", _LEN)
_T_TABLE_ENTRY = _tag(pb.Entity, "table_entry", _LEN)
_T_TABLE_ID = _tag(pb.TableEntry, "table_id", _VARINT)
_T_MATCH = _tag(pb.TableEntry, "match", _LEN)
_T_ACTION = _tag(pb.TableEntry, "action", _LEN)
_T_FIELD_ID = _tag(pb.FieldMatch, "field_id", _VARINT)
_T_EXACT = _tag(pb.FieldMatch, "exact", _LEN)
_T_LPM = _tag(pb.FieldMatch, "lpm", _LEN)
_T_PREFIX = _tag(pb.FieldMatch.LPM, "prefix_len", _VARINT)
_T_VALUE = _tag(pb.FieldMatch.Exact, "value", _LEN)
assert _T_VALUE == _tag(pb.FieldMatch.LPM, "value", _LEN)


def encode_exact_update(utype: int, table_id: int, field_id: int, value: bytes,
                        action: Optional[bytes], prefix_len: Optional[int] = None) -> bytes:
    """The ``updates`` item (key, length, Update) of a WriteRequest whose TableEntry sets
    ``table_id``, one match field (exact; LPM of ``prefix_len`` when given) and, unless
    None, the serialized TableAction ``action``, in field-number order as upb writes it
    (every id, ``value`` and ``prefix_len`` given non-zero or non-empty: upb leaves out a
    field at its default).

    >>> from p4.v1 import p4runtime_pb2 as pb
    >>> req = pb.WriteRequest()
    >>> te = req.updates.add(type=3).entity.table_entry
    >>> te.table_id = 5; te.match.add(field_id=2).exact.value = b"ab"
    >>> encode_exact_update(3, 5, 2, b"ab", None) == req.SerializeToString()
    True
    """
    if prefix_len is None:
        fm = bytes((_T_FIELD_ID,)) + varint(field_id) + _field(_T_EXACT, _field(_T_VALUE, value))
    else:
        fm = bytes((_T_FIELD_ID,)) + varint(field_id) + _field(
            _T_LPM, _field(_T_VALUE, value) + bytes((_T_PREFIX,)) + varint(prefix_len))
    te = bytes((_T_TABLE_ID,)) + varint(table_id) + _field(_T_MATCH, fm)
    if action is not None:
        te += _field(_T_ACTION, action)
    upd = bytes((_T_TYPE,)) + varint(utype) + _field(_T_ENTITY, _field(_T_TABLE_ENTRY, te))
    return _field(_T_UPDATES, upd)


_TYPES = (1, 2, 3)           # Update.INSERT, MODIFY, DELETE: the types a head is made for
assert tuple(pb.Update.Type.values()[1:]) == _TYPES


class _Shape:
    """The heads of one table's updates: ``heads[type << 16 | length << 8 | value length]``
    is the update's bytes up to its value, or None when no update of those lengths fits."""

    __slots__ = ("table_id", "field_id", "lpm", "tid", "at", "heads")
    multi = False

    def __init__(self, table_id: int, field_id: int, lpm: bool) -> None:
        self.table_id = table_id
        self.field_id = field_id
        self.lpm = lpm          # the field is LPM: its prefix length (one byte) follows the value
        self.tid = varint(table_id)
        # where the value's length is: 15 one-byte keys and lengths, then the two ids
        self.at = 15 + len(varint(table_id)) + len(varint(field_id))
        self.heads: dict[int, Optional[bytes]] = {}

    def head(self, utype: int, length: int, n: int) -> Optional[bytes]:
        """The head of an update of ``length`` bytes (after its key and length) whose
        value is ``n`` bytes, made once (``encode_exact_update`` of zero bytes)."""
        key = (utype << 16) | (length << 8) | n
        if key in self.heads:
            return self.heads[key]
        at = self.at
        rest = length + 1 - at - n            # bytes after the value: [prefix length,] the action, keyed
        plen: Optional[int] = None
        if self.lpm:
            rest -= 2
            plen = 1                           # any one-byte prefix length: the head stops before it
        head: Optional[bytes] = None
        if utype in _TYPES and 0 < n < 0x80 and (rest == 0 or 2 <= rest < 0x80 + 2):
            action = None if rest == 0 else bytes(rest - 2)
            enc = encode_exact_update(utype, self.table_id, self.field_id, bytes(n), action, plen)
            if len(enc) == length + 2 and enc[at] == n:
                head = enc[:at + 1]
        self.heads[key] = head
        return head


class _MultiShape:
    """A table of several exact fields: an update is its fixed outer head (the update
    type, the nested lengths, which follow from the update's length, and the table id),
    then one FieldMatch per field, in the P4Info's order, each a fixed head (its key and
    length, the field id, the exact value's key and length) and the value, then at most
    the TableAction. Checked piece by piece with ``bytes.startswith`` and byte compares:
    a match means the update is the canonical encoding of exactly that message."""

    __slots__ = ("table_id", "field_heads", "outer")
    multi = True

    def __init__(self, table_id: int, field_ids: tuple[int, ...]) -> None:
        self.table_id = table_id
        #: per field: the FieldMatch's bytes from its field id's key to the exact's key
        self.field_heads = tuple(bytes((_T_FIELD_ID,)) + varint(f) + bytes((_T_EXACT,)) for f in field_ids)
        self.outer: dict[int, bytes] = {}     # type << 8 | update length -> the outer head

    def read(self, buf: bytes, i: int, e: int) -> Optional[WireEntry]:
        """The :data:`WireEntry` of the update at ``buf[i:e]`` (its key and one-byte length
        at ``i``), or None."""
        utype, length = buf[i + 3], buf[i + 1]
        key = utype << 8 | length
        head = self.outer.get(key)
        if head is None:
            if utype not in _TYPES or length < 8:
                return None
            head = self.outer[key] = bytes((_T_UPDATES, length, _T_TYPE, utype, _T_ENTITY, length - 4,
                                            _T_TABLE_ENTRY, length - 6, _T_TABLE_ID)) + varint(self.table_id)
        if not buf.startswith(head, i):
            return None
        p = i + len(head)
        values = []
        for fh in self.field_heads:
            # _T_MATCH, FieldMatch length, field id, _T_EXACT, n + 2, _T_VALUE, n, the value
            q = p + 2 + len(fh)
            if q + 2 >= e or buf[p] != _T_MATCH or not buf.startswith(fh, p + 2) or buf[q + 1] != _T_VALUE:
                return None
            n = buf[q + 2]
            if not 0 < n < 0x7E or buf[q] != n + 2 or buf[p + 1] != len(fh) + 3 + n:
                return None
            p = q + 3 + n
            if p > e:
                return None
            values.append(buf[q + 3:p])
        if p == e:
            return (utype, self.table_id, tuple(values), None, -1)
        if p + 1 < e and buf[p] == _T_ACTION and buf[p + 1] == e - p - 2:
            return (utype, self.table_id, tuple(values), buf[p + 2:e], -1)
        return None


class WireShapes:
    """The one-field tables of a pipeline, by the shortest varint of their id: what
    :func:`parse_updates` compares updates with. ``tables`` maps table id → (the match
    field's id, whether it is LPM; else exact); ``multi`` maps the id of a table of
    several exact fields → their ids in the P4Info's order.

    >>> WireShapes({0x02000001: (1, False)}, {0x02000002: (1, 2)}).count
    2
    """

    def __init__(self, tables: dict[int, tuple[int, bool]],
                 multi: Optional[dict[int, tuple[int, ...]]] = None) -> None:
        self.count = 0
        self.by_id_len: dict[int, dict[bytes, Union[_Shape, _MultiShape]]] = {}
        for table_id, (field_id, lpm) in tables.items():
            if table_id <= 0 or field_id <= 0:
                continue
            tv = varint(table_id)
            self.by_id_len.setdefault(len(tv), {})[tv] = _Shape(table_id, field_id, lpm)
            self.count += 1
        for table_id, field_ids in (multi or {}).items():
            if table_id <= 0 or len(field_ids) < 2 or min(field_ids) <= 0:
                continue
            tv = varint(table_id)
            self.by_id_len.setdefault(len(tv), {})[tv] = _MultiShape(table_id, field_ids)
            self.count += 1

    def shape(self, buf: bytes, s: int) -> Optional[Union[_Shape, _MultiShape]]:
        """The shape whose table id is written at ``buf[s + 9:]`` (where an update
        starting at ``s`` has it when its lengths are one byte), or None."""
        for k, shapes in self.by_id_len.items():
            got = shapes.get(buf[s + 9:s + 9 + k])
            if got is not None:
                return got
        return None


def parse_updates(buf: bytes, count: int, shapes: WireShapes) -> Optional[list[Optional[WireEntry]]]:
    """One :data:`WireEntry` or None per update of the WriteRequest ``buf`` (upb's
    encoding), in order; None altogether when ``buf`` does not hold exactly ``count``
    updates where they are looked for, or no table has a shape.

    >>> parse_updates(pb.WriteRequest(device_id=1).SerializeToString(), 0, WireShapes({}))
    """
    got = _parse(buf, shapes)
    if got is None or len(got[0]) != count:
        return None
    return got[0]


class Updates:
    """The ``updates`` of a WriteRequest left as bytes (``buf[first:end]``, ``count``
    items), each parsed by upb when it is asked for (``updates[i]``): what the server
    passes where every update was read from the wire, so that the whole request is not
    parsed for nothing (upb: ~0.4 µs an update).

    >>> req = pb.WriteRequest(device_id=1, updates=[pb.Update(type=1), pb.Update(type=3)])
    >>> data = req.SerializeToString(); at = data.index(bytes((_T_UPDATES,)))
    >>> ups = Updates(data, at, len(data), 2); len(ups), ups[1].type
    (2, 3)
    """

    __slots__ = ("_buf", "_first", "_end", "_count", "_spans")

    def __init__(self, buf: bytes, first: int, end: int, count: int) -> None:
        self._buf, self._first, self._end, self._count = buf, first, end, count
        self._spans: Optional[list[tuple[int, int]]] = None

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, i: int) -> pb.Update:
        if self._spans is None:           # walked once, on the first ask (a failed update)
            spans = []
            j = self._first
            while j < self._end:
                n, k = _length(self._buf, j + 1, self._end)
                spans.append((k, k + n))
                j = k + n
            self._spans = spans
        s, e = self._spans[i]
        return pb.Update.FromString(self._buf[s:e])


def split_request(buf: bytes, shapes: WireShapes) -> Optional[tuple[pb.WriteRequest, Updates, list[WireEntry]]]:
    """The WriteRequest ``buf`` as (its fields but the updates, parsed by upb; its
    :class:`Updates`; a :data:`WireEntry` for each), when *every* update is read from
    the bytes; None otherwise (parse the whole request then). Every byte is then checked:
    the updates' by their heads (the action's by upb when its call is first made), the
    rest by upb (``DecodeError`` for a field that does not parse, as the whole
    request's parse would raise).

    >>> req = pb.WriteRequest(device_id=1)
    >>> te = req.updates.add(type=1).entity.table_entry
    >>> te.table_id = 7; te.match.add(field_id=1).exact.value = b"\\x0a"
    >>> head, ups, wire = split_request(req.SerializeToString(), WireShapes({7: (1, False)}))
    >>> head.device_id, len(head.updates), len(ups), wire
    (1, 0, 1, [(1, 7, b'\\n', None, -1)])
    """
    got = _parse(buf, shapes)
    if got is None:
        return None
    out, first, last = got
    if not out or any(w is None for w in out):
        return None
    head = pb.WriteRequest.FromString(buf[:first] + buf[last:])
    return head, Updates(buf, first, last, len(out)), out      # type: ignore[return-value]


def _parse(buf: bytes, shapes: WireShapes) -> Optional[tuple[list[Optional[WireEntry]], int, int]]:
    """:func:`parse_updates` less the count, with where the updates start and end."""
    if not shapes.count:
        return None
    out: list[Optional[WireEntry]] = []
    end = len(buf)
    i = 0
    # the fields before the updates (device_id, election_id; role_id, role, atomicity
    # come in field-number order around them): skipped by their wire type
    while i < end and buf[i] != _T_UPDATES:
        i = _skip_field(buf, i, end)
        if i < 0:
            return None
    first = i
    last: Optional[Union[_Shape, _MultiShape]] = None
    append = out.append
    while i < end and buf[i] == _T_UPDATES:
        length = buf[i + 1] if i + 1 < end else 0x80
        if length >= 0x80:                   # 128 bytes or more: walked over, message path
            length, j = _length(buf, i + 1, end)
            if length < 0:
                return None
            append(None)
            i = j + length
            continue
        e = i + 2 + length
        if e > end:
            return None
        # the last update's table first (a batch is mostly one table's); its head
        # holds the table id, so a miss is caught there and the others are tried
        shape = last
        while True:
            if shape is None:
                shape = shapes.shape(buf, i)
                if shape is None:
                    append(None)
                    break
            if shape.multi:
                got = shape.read(buf, i, e)      # type: ignore[union-attr]
                if got is not None:
                    last = shape
                    append(got)
                    break
                if shape is last:
                    shape = last = None
                    continue
                append(None)
                break
            at = i + shape.at                    # type: ignore[union-attr]
            if at >= e:
                head = None
            else:
                n = buf[at]
                key = (buf[i + 3] << 16) | (length << 8) | n
                head = shape.heads.get(key, 0)   # type: ignore[call-overload]
                if head == 0:
                    head = shape.head(buf[i + 3], length, n)
            if head is not None and buf.startswith(head, i):
                last = shape
                v1 = at + 1 + n
                a0 = v1
                plen = -1
                if shape.lpm:                   # the head left room for a one-byte prefix length
                    plen = buf[v1 + 1]
                    a0 = v1 + 2
                    if buf[v1] != _T_PREFIX or plen >= 0x80:
                        append(None)
                        break
                if a0 == e:
                    append((buf[i + 3], shape.table_id, buf[at + 1:v1], None, plen))
                elif buf[a0] == _T_ACTION and buf[a0 + 1] == e - a0 - 2:
                    append((buf[i + 3], shape.table_id, buf[at + 1:v1], buf[a0 + 2:e], plen))
                    if not shape.lpm:
                        # the updates after it with the same head (type, lengths, table,
                        # field: a batch's usual run) have their value and action at the
                        # same offsets: each is one head and one action-head compare
                        e = _same_heads(buf, e, end, head, shape.table_id, at - i + 1, v1 - i, e - i, out)
                        if e < 0:
                            return None
                else:
                    append(None)
                break
            if shape is last:
                shape = last = None
                continue
            append(None)
            break
        i = e
    after = i
    if i != end:
        # fields after the updates (atomicity, role): varints and one string
        while i < end:
            if buf[i] == _T_UPDATES:
                return None
            i = _skip_field(buf, i, end)
            if i < 0:
                return None
    if i != end:
        return None
    return out, first, after


def _same_heads(buf: bytes, i: int, end: int, head: bytes, table_id: int, v0: int, v1: int,
                size: int, out: list[Optional[WireEntry]]) -> int:
    """Append the :data:`WireEntry` of each update from ``buf[i]`` on that starts with
    ``head`` (an exact field's: the update's key, lengths, type, table and field ids,
    value length) and is ``size`` bytes with its value at ``[v0:v1]`` and its action's
    key and length right after it, as the one before it was; returns where the first
    other one starts (-1: an update runs past ``end``)."""
    utype = head[3]
    act = bytes((_T_ACTION, size - v1 - 2))
    append = out.append
    while buf.startswith(head, i):
        e = i + size
        if e > end:
            return -1
        if not buf.startswith(act, i + v1):
            return i
        append((utype, table_id, buf[i + v0:i + v1], buf[i + v1 + 2:e], -1))
        i = e
    return i


def _skip_field(buf: bytes, i: int, end: int) -> int:
    """The index after the field whose one-byte key is at ``buf[i]`` (a varint or a
    length-delimited field); -1 for another key or wire type, or one running past ``end``."""
    tag = buf[i]
    wt = tag & 7
    if tag >= 0x80 or wt not in (_VARINT, _LEN):
        return -1
    j = i + 1
    if wt == _VARINT:
        while j < end and buf[j] >= 0x80:
            j += 1
        return j + 1
    n, j = _length(buf, j, end)
    return -1 if n < 0 else j + n
