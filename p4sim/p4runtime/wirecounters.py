"""Counter entries for a Read, written straight in protobuf's wire format.

A wildcard Read of one counter (every cell: GOR's and the monitor's polls) built one
``Entity`` per cell through upb's accessors costs ~2.3 µs a cell, 9–10 ms for 4,096 cells,
most of a Read's 10–12 ms end to end (issue 36's goal is 10 ms). Here the cells are
encoded as ``ReadResponse.entities`` items of one fixed width, with numpy, and the
response merges them with one ``MergeFromString``: 4,096 cells in ~0.3 ms. The indexed
cells a Read asks for, counter after counter (GOR's poll), are encoded in one call too
(:func:`encode_counter_runs`). The answer
is the same message: upb keeps the values, not their bytes, and re-encodes them
canonically when the server sends the response (``tests/p4sim/p4runtime/test_wire_counters.py``
compares both paths message for message).

The fixed width comes from *padded* varints: every varint of an item (counter id, index,
byte and packet counts) is as long as the largest value's among them, the shorter ones carrying continuation bytes of zero bits
(``0x80 … 0x00``), which every conforming parser reads as the same value (protobuf's
encoding guide: varints of up to 10 bytes). The field numbers are read from
the generated descriptors, not written here.

Example::

    >>> from p4.v1 import p4runtime_pb2 as pb
    >>> wire, width = encode_counter_cells(0x12000001, range(2), [3, 0], [180, 0],
    ...                                    packets_too=True, bytes_too=True)
    >>> resp = pb.ReadResponse.FromString(wire)
    >>> [(e.counter_entry.index.index, e.counter_entry.data.packet_count) for e in resp.entities]
    [(0, 3), (1, 0)]
    >>> len(wire) == 2 * width
    True
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np
from p4.v1 import p4runtime_pb2 as pb

from p4sim.p4runtime.wireformat import WIRE_LEN, WIRE_VARINT, field_key, varint

_LEN, _VARINT = WIRE_LEN, WIRE_VARINT

_T_ENTITIES = field_key(pb.ReadResponse, "entities", _LEN)
_T_COUNTER_ENTRY = field_key(pb.Entity, "counter_entry", _LEN)
_T_COUNTER_ID = field_key(pb.CounterEntry, "counter_id", _VARINT)
_T_INDEX = field_key(pb.CounterEntry, "index", _LEN)
_T_INDEX_VALUE = field_key(pb.Index, "index", _VARINT)
_T_DATA = field_key(pb.CounterEntry, "data", _LEN)
_T_BYTES = field_key(pb.CounterData, "byte_count", _VARINT)
_T_PACKETS = field_key(pb.CounterData, "packet_count", _VARINT)


INT64_MAX = 2**63 - 1
"""CounterData's counts are int64: a larger count is refused, as upb refuses to set it."""


def _cells(values: Sequence[int], idx: np.ndarray) -> np.ndarray:
    """Cells ``idx`` of a counter column as uint64 (a ctypes array of the native path is
    read in place; of a list of Python ints only those cells are converted)."""
    try:
        return np.frombuffer(values, dtype=np.uint64)[idx]     # type: ignore[call-overload]
    except TypeError:                                          # a list of Python ints
        return np.array([values[i] for i in idx.tolist()], dtype=np.uint64)


def _padded(values: np.ndarray, width: int) -> np.ndarray:
    """``values`` (uint64) as varints of exactly ``width`` bytes each: an (n, width) array."""
    shifts = np.arange(width, dtype=np.uint64) * np.uint64(7)
    groups = (values[:, None] >> shifts[None, :]) & np.uint64(0x7F)
    groups[:, :-1] |= np.uint64(0x80)
    return groups.astype(np.uint8)


def _column(values: Sequence[int]) -> np.ndarray:
    """A counter column as uint64 (a ctypes array of the native path is read in place)."""
    try:
        return np.frombuffer(values, dtype=np.uint64)       # type: ignore[call-overload]
    except TypeError:                                       # a list of Python ints
        return np.array(values, dtype=np.uint64)


def _varint_width(values: np.ndarray) -> int:
    """Bytes of the longest varint among ``values`` (at least 1)."""
    top = int(values.max()) if len(values) else 0
    return max(1, -(-top.bit_length() // 7))


class CounterRun(NamedTuple):
    """Cells ``indices`` of one counter: its id, its whole ``packets`` / ``nbytes`` columns
    (lists or the native path's ctypes arrays) and which of them its unit reports."""

    counter_id: int
    indices: Sequence[int]
    packets: Sequence[int]
    nbytes: Sequence[int]
    packets_too: bool
    bytes_too: bool


def _indices(indices: Sequence[int]) -> np.ndarray:
    """A run's cell indices as uint64 (a ``range``, a wildcard's, without a list)."""
    if isinstance(indices, range):
        return np.arange(indices.start, indices.stop, indices.step, dtype=np.uint64)
    return np.asarray(indices, dtype=np.uint64)


def encode_counter_runs(runs: Sequence[CounterRun]) -> tuple[bytes, int]:
    """``ReadResponse.entities`` items, one per index of each run in turn, each a
    ``CounterEntry`` of the run's counter with its byte and packet counts (a count its
    unit does not report is written 0: proto3 has no presence for them, so it is the
    same message); returns (the wire bytes, the width of one item). One call for every
    run of a Read: GOR's poll asks a switch for ~116 cells of 7 counters, and numpy's
    cost per call (~60 µs) was paid per counter. All four varints of an item (counter
    id, index, bytes, packets) are as wide as the largest value among them. A count
    over :data:`INT64_MAX` raises ``OverflowError`` (the entity path's upb raises
    ``ValueError``: both end the Read with ``INTERNAL``).

    >>> wire, width = encode_counter_runs([CounterRun(0x12000001, [1], [0, 5], [0, 9], True, False),
    ...                                    CounterRun(0x12000002, [0, 1], [3, 4], [7, 8], True, True)])
    >>> [(e.counter_entry.counter_id & 0xF, e.counter_entry.index.index, e.counter_entry.data.packet_count,
    ...   e.counter_entry.data.byte_count) for e in pb.ReadResponse.FromString(wire).entities]
    [(1, 1, 5, 0), (2, 0, 3, 7), (2, 1, 4, 8)]
    """
    idxs = [_indices(r.indices) for r in runs]
    n = sum(len(i) for i in idxs)
    if n == 0:
        return b"", 1
    cols = np.zeros((n, 4), dtype=np.uint64)      # counter id, index, bytes, packets
    at = 0
    for r, i in zip(runs, idxs):
        end = at + len(i)
        cols[at:end, 0] = r.counter_id
        cols[at:end, 1] = i
        if len(i):
            if r.bytes_too:
                cols[at:end, 2] = _cells(r.nbytes, i)
            if r.packets_too:
                cols[at:end, 3] = _cells(r.packets, i)
        at = end
    top = int(cols[:, 2:].max())
    if top > INT64_MAX:
        raise OverflowError(f"Value out of range: {top} (CounterData counts are int64)")
    w = _varint_width(cols)
    data_len = 2 + 2 * w
    entry_len = 1 + w + 3 + w + 2 + data_len
    entity_len = 2 + entry_len
    width = 2 + entity_len
    if entity_len >= 128:
        raise AssertionError(f"counter entry of {entity_len} bytes needs a two-byte length")
    groups = (cols[:, :, None] >> (np.arange(w, dtype=np.uint64) * np.uint64(7))) & np.uint64(0x7F)
    groups[:, :, :-1] |= np.uint64(0x80)
    varints = groups.astype(np.uint8)                # (n, 4, w)
    out = np.empty((n, width), dtype=np.uint8)
    out[:, :5] = (_T_ENTITIES, entity_len, _T_COUNTER_ENTRY, entry_len, _T_COUNTER_ID)
    at = 5
    for col, after in ((0, (_T_INDEX, w + 1, _T_INDEX_VALUE)), (1, (_T_DATA, data_len, _T_BYTES)),
                       (2, (_T_PACKETS,)), (3, ())):
        out[:, at:at + w] = varints[:, col]
        at += w
        out[:, at:at + len(after)] = after
        at += len(after)
    return out.tobytes(), width


def encode_counter_cells(counter_id: int, indices: Sequence[int], packets: Sequence[int],
                         nbytes: Sequence[int], packets_too: bool, bytes_too: bool) -> tuple[bytes, int]:
    """``ReadResponse.entities`` items, one per index in ``indices``, each a
    ``CounterEntry`` of ``counter_id`` with ``packets[i]`` / ``nbytes[i]`` (the counter's
    whole columns) as its unit reports them; returns (the wire bytes, the width of one item).
    Each column's varints are as wide as its largest value's (a wildcard Read of every
    counter takes this path: narrower items than :func:`encode_counter_runs`, whose one
    width for all four fields is the 5-byte counter id's; with that width the answers of
    tests/security's stalled-Reads attack grew and the controller's Read starved again). A count over
    :data:`INT64_MAX` raises ``OverflowError`` (the entity path's upb raises ``ValueError``:
    both end the Read with ``INTERNAL``)."""
    if isinstance(indices, range):
        idx = np.arange(indices.start, indices.stop, indices.step, dtype=np.uint64)
    else:
        idx = np.asarray(indices, dtype=np.uint64)
    columns = [(tag, _column(column)[idx] if len(idx) else np.empty(0, dtype=np.uint64))
               for too, tag, column in ((bytes_too, _T_BYTES, nbytes), (packets_too, _T_PACKETS, packets))
               if too]
    for _, values in columns:
        if len(values) and int(values.max()) > INT64_MAX:
            raise OverflowError(f"Value out of range: {int(values.max())} (CounterData counts are int64)")
    widths = [_varint_width(values) for _, values in columns]
    index_bytes = _varint_width(idx)
    data_len = sum(1 + w for w in widths)
    head = bytes([_T_COUNTER_ID]) + varint(counter_id) + bytes([_T_INDEX, index_bytes + 1, _T_INDEX_VALUE])
    entry_len = len(head) + index_bytes + 2 + data_len
    entity_len = 2 + entry_len
    width = 2 + entity_len
    if entity_len >= 128:
        raise AssertionError(f"counter entry of {entity_len} bytes needs a two-byte length")
    prefix = bytes([_T_ENTITIES, entity_len, _T_COUNTER_ENTRY, entry_len]) + head
    out = np.empty((len(idx), width), dtype=np.uint8)
    at = len(prefix)
    out[:, :at] = np.frombuffer(prefix, dtype=np.uint8)
    out[:, at:at + index_bytes] = _padded(idx, index_bytes)
    at += index_bytes
    out[:, at:at + 2] = (_T_DATA, data_len)
    at += 2
    for (tag, values), w in zip(columns, widths):
        out[:, at] = tag
        out[:, at + 1:at + 1 + w] = _padded(values, w)
        at += 1 + w
    return out.tobytes(), width
