"""Source ports through the hash model: which UDP source ports send a flow to a given
member of an ECMP group (the path engine's last step: a chosen path becomes a port).

CRC hashes are affine in their input bits (``H(p) = H(0) ^ L(p)``, see
``p4src.hashmodel``), so with a power-of-two group the condition ``H % size == i`` is a
small linear system over GF(2) in the port's bits:

* :func:`port_filter` — a predicate ``port → bool`` (a few parity checks per port), for a
  search that stops at the first good port (``PathEngine.solve_sport``: typically a
  handful of ports tried, not 65,536);
* :func:`ports_reaching` — every solution, enumerated by elimination (512 ports of
  65,536 for a group of 128).

Other group sizes (or a hash without the source port) fall back to the affine table
(:func:`p4src.hashmodel.port_to_member_table`).

>>> from p4src.hashmodel import GroupModel
>>> sw = SwitchHashModel("l", seed=5, groups={1: GroupModel(0, ["a", "b"])})
>>> ok = port_filter(sw, 1, 1, 2, 4791, 1)
>>> all(member_index(sw, 1, 1, 2, 17, p, 4791) == 1 for p in range(49152, 49252) if ok(p))
True
"""
from __future__ import annotations

from typing import Callable

from p4src.hashmodel import (ALGORITHMS, Flow, HashField, SwitchHashModel, flow_hash, member_index,
                             pack_fields, port_to_member_table)

PROTO_UDP = 17

_BASIS: dict[tuple[str, tuple[HashField, ...]], tuple[int, ...]] = {}


def _sport_basis(model: SwitchHashModel) -> tuple[int, ...]:
    """``basis[b] = crc(e_b) ^ crc(0)``: the hash change of flipping source-port bit ``b``
    (CRC is affine in its input bits, see ``p4src.hashmodel``); depends only on the
    algorithm and field layout."""
    key = (model.algorithm, model.fields)
    if key not in _BASIS:
        widths = [f.width_bits for f in model.fields]
        names = [f.name for f in model.fields]
        pos = names.index("udp.src_port")
        algo = ALGORITHMS[model.algorithm]
        zero = algo(pack_fields([(0, w) for w in widths]))
        basis = []
        for b in range(widths[pos]):
            vals = [(0, w) for w in widths]
            vals[pos] = (1 << b, widths[pos])
            basis.append(algo(pack_fields(vals)) ^ zero)
        _BASIS[key] = tuple(basis)
    return _BASIS[key]


def _linear(model: SwitchHashModel, group_id: int) -> bool:
    size = model.group(group_id).size
    return not (size & (size - 1) or "udp.src_port" not in [f.name for f in model.fields]
                or model.group(group_id).base)


def _rows(model: SwitchHashModel, group_id: int, src: int, dst: int, dport: int,
          want_index: int) -> list[tuple[int, int]]:
    """For each low hash bit j: (the port bits that flip it, the bit wanted)."""
    group = model.group(group_id)
    mask_m = (1 << model.member_width_bits) - 1
    basis = _sport_basis(model)
    k = group.size.bit_length() - 1
    target = ((want_index - group.base) & mask_m) ^ flow_hash(model, Flow(src, dst, PROTO_UDP, 0, dport))
    return [(sum(1 << b for b, v in enumerate(basis) if v >> j & 1), target >> j & 1) for j in range(k)]


def port_filter(model: SwitchHashModel, group_id: int, src: int, dst: int, dport: int,
                want_index: int) -> Callable[[int], bool]:
    """A predicate: does source port ``p`` land on member ``want_index`` of ``group_id``
    (flow ``src → dst``, UDP, destination port ``dport``)? Cheap per call (one parity
    per low hash bit) once built."""
    model = model.for_group(group_id)          # a ports-first group hashes its own list
    if not _linear(model, group_id):
        table = port_to_member_table(model, group_id, src, dst, PROTO_UDP, dport)
        return lambda p: table[p] == want_index
    rows = _rows(model, group_id, src, dst, dport, want_index)
    return lambda p: all((bin(m & p).count("1") & 1) == r for m, r in rows)


def ports_reaching(model: SwitchHashModel, group_id: int, src: int, dst: int, dport: int,
                   want_index: int) -> list[int]:
    """Every UDP source port whose member index in ``group_id`` is ``want_index``, sorted.

    With a power-of-two group the system is solved by elimination and its solutions
    enumerated, no sweep; other sizes sweep the affine table.

    >>> from p4src.hashmodel import GroupModel
    >>> sw = SwitchHashModel("l", seed=5, groups={1: GroupModel(0, ["a", "b", "c", "d"])})
    >>> ps = ports_reaching(sw, 1, 1, 2, 4791, 3)
    >>> len(ps), {member_index(sw, 1, 1, 2, 17, p, 4791) for p in ps}
    (16384, {3})
    """
    model = model.for_group(group_id)
    if not _linear(model, group_id):
        table = port_to_member_table(model, group_id, src, dst, PROTO_UDP, dport)
        return [p for p, m in enumerate(table) if m == want_index]
    basis = _sport_basis(model)
    pivots: list[tuple[int, int, int]] = []           # (pivot bit, row mask, rhs)
    for mask, rhs in _rows(model, group_id, src, dst, dport, want_index):
        for pb, pm, pr in pivots:
            if mask >> pb & 1:
                mask ^= pm
                rhs ^= pr
        if mask == 0:
            if rhs:
                return []
            continue
        pb = mask.bit_length() - 1
        pivots = [(b, m ^ mask, r ^ rhs) if m >> pb & 1 else (b, m, r) for b, m, r in pivots]
        pivots.append((pb, mask, rhs))
    pivot_bits = {pb for pb, _, _ in pivots}
    free = [b for b in range(len(basis)) if b not in pivot_bits]
    out = []
    for combo in range(1 << len(free)):
        port = 0
        for i, b in enumerate(free):
            if combo >> i & 1:
                port |= 1 << b
        for pb, pm, pr in pivots:
            if pr ^ (bin(pm & port & ~(1 << pb)).count("1") & 1):
                port |= 1 << pb
        out.append(port)
    return sorted(out)


__all__ = ["PROTO_UDP", "port_filter", "ports_reaching"]
