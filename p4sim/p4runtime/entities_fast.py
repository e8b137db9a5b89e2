"""Per-table write plans: the fast path of table-entry INSERTs, MODIFYs and DELETEs, for
:class:`p4sim.p4runtime.entities_tables.TableStore`.

A plain table write goes through three layers that each check the same thing again:
the entity layer decodes every bytestring into runtime match objects
(``decode_matches``, ``decode_action``), the runtime table validates those objects once
more and canonicalises the key (``Table.add_entry``: ``_ident``, ``canonical_match``,
``validate_action_call``), and every step looks the table's P4Info up by id. A
:class:`TablePlan` is built once per table when a pipeline is loaded: for each match
field its position, kind, width and don't-care value already in canonical form, for each
action the entry may take its name and its parameters' positions and widths. A write
then decodes straight into the key's canonical form (identity, mask, value, ranges) and
the call, and hands both to ``Table.add_canonical_entry`` / ``modify_canonical_entry`` /
``delete_canonical_entry``.

The plan never decides an error. It answers for the writes it can prove valid and
declines (None) for anything else: any bytestring that does not fit, a don't-care written
out, a field unknown or repeated, an unset or indirect action, a priority out of range,
an idle timeout, direct counter or meter data, ``is_const``, the default entry, a key
already present, a full table... The store then takes the checked path, which gives the
P4Runtime code and message it always gave. As a plan changes nothing before it answers,
declining costs the work done so far and nothing else; the checked path stays the one
definition of what is valid. Tables the plan cannot serve at all (action profiles and
selectors, ``@p4runtime_translation`` fields, const or initial entries, a P4Info that
disagrees with the program on a kind or width, match kinds other than the five of
v1model) get no plan. tests/p4sim/p4runtime/test_entities_fast.py pins the equivalence:
the same updates, valid and invalid, give the same codes, messages and state through
both paths.

Example::

    >>> plans = build_plans(index, extras=False)                      # doctest: +SKIP
    >>> plans[table_id].decode_insert(table_entry_msg)                # doctest: +SKIP
    ((Exact(value=10),), ((10,), 0), 255, 10, (), 0, ActionCall(name='I.fwd', args=(1,)))
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from google.protobuf.message import DecodeError
from p4.v1 import p4runtime_pb2 as pb

from p4sim.p4runtime.entities_index import ProgramIndex, TableInfo
from p4sim.p4runtime.entities_values import lpm_host_bits
from p4sim.p4runtime.wirewrites import WireEntry
from p4sim.runtime.tables import ActionCall, Exact, Lpm, Optional_, Range, Ternary, canonical_match

_KINDS = ("exact", "lpm", "ternary", "range", "optional")
_DONT_CARE = {"lpm": Lpm(0, 0), "ternary": Ternary(0, 0), "optional": Optional_(None)}
_PRIORITY_LIMIT = 1 << 31
_INSERT = pb.Update.INSERT
_EXACT_VALUE: Any = Exact.value
"""The slot of :class:`Exact`'s ``value`` (its ``__set__`` fills a new Exact; see wire_insert_items)."""
ACTION_CACHE_MAX = 4096
"""Distinct action messages a plan remembers the decoded call of (then it starts afresh)."""

Key = tuple[tuple[Any, ...], tuple, int, int, tuple]
"""A decoded key: (match objects, identity, mask, value, ranges), as ``Table._ident`` makes them."""
Part = tuple[Any, Any, int, int, Optional[tuple[int, int]]]
"""One field: (match object, identity part, mask part, value part, range or None)."""


class TablePlan:
    """What a write to one table needs, precomputed (see the module docstring)."""

    __slots__ = ("ti", "table", "fields", "widths", "dont_care", "needs_priority", "support_timeout",
                 "actions", "nfields", "single_exact", "single_lpm", "multi_exact", "direct_meter", "_calls")

    def __init__(self, ti: TableInfo, fields: dict[int, tuple[int, str, int, int]], widths: tuple[int, ...],
                 dont_care: tuple[Optional[Part], ...], actions: dict[int, tuple[str, dict[int, tuple[int, int]], int]]
                 ) -> None:
        self.ti = ti
        self.table = ti.table
        self.fields = fields                  # field id -> (position, kind, width, all-ones)
        self.widths = widths                  # per position
        self.dont_care = dont_care            # per position: the omitted field's Part (None: exact)
        self.needs_priority = ti.table.needs_priority
        self.support_timeout = ti.table.support_timeout
        self.direct_meter = ti.table.direct_meter is not None
        self.actions = actions                # action id -> (name, param id -> (position, width), count)
        self.nfields = len(widths)
        kinds = [f[1] for f in fields.values()]
        # serialized TableAction -> its ActionCall: a batch usually repeats a few actions
        # (next hops, ports); the call is a pure function of the message's bytes, and an
        # ActionCall is immutable, so entries may share one
        self._calls: dict[bytes, ActionCall] = {}
        self.single_exact: Optional[tuple[int, int, int]] = None
        self.single_lpm: Optional[tuple[int, int, int]] = None    # (field id, width, all-ones)
        if kinds == ["exact"]:
            (field_id, (_pos, _kind, w, full)), = fields.items()
            self.single_exact = (field_id, w, full)
        elif kinds == ["lpm"]:
            (field_id, (_pos, _kind, w, full)), = fields.items()
            self.single_lpm = (field_id, w, full)
        #: a table of several exact fields: (field id, width, all-ones) per position, whose
        #: updates :mod:`.wirewrites` reads with the fields in this order
        self.multi_exact: Optional[tuple[tuple[int, int, int], ...]] = None
        if len(kinds) > 1 and set(kinds) == {"exact"}:
            by_pos = sorted((pos, fid, w, full) for fid, (pos, _kind, w, full) in fields.items())
            if [p for p, *_ in by_pos] == list(range(len(by_pos))):
                self.multi_exact = tuple((fid, w, full) for _pos, fid, w, full in by_pos)

    # ------------------------------------------------------------------ decoding
    def _key(self, te: pb.TableEntry, priority: int) -> Optional[Key]:
        if self.single_exact is not None:
            return self._single_exact_key(te, priority)
        got: list[Optional[Part]] = [None] * self.nfields
        fields = self.fields
        for fm in te.match:
            f = fields.get(fm.field_id)
            if f is None:
                return None
            pos, kind, w, full = f
            if got[pos] is not None or fm.WhichOneof("field_match_type") != kind:
                return None
            if kind == "exact":
                data = fm.exact.value
                v = int.from_bytes(data, "big")
                if not data or v >> w:
                    return None
                got[pos] = (Exact(v), v, full, v, None)
            elif kind == "lpm":
                lpm = fm.lpm
                plen = lpm.prefix_len
                data = lpm.value
                v = int.from_bytes(data, "big")
                if not data or v >> w or plen <= 0 or plen > w:
                    return None
                host = (1 << (w - plen)) - 1
                if v & lpm_host_bits(plen, w):
                    return None
                got[pos] = (Lpm(v, plen), (v, plen), full ^ host, v, None)
            elif kind == "ternary":
                t = fm.ternary
                data, mdata = t.value, t.mask
                v, m = int.from_bytes(data, "big"), int.from_bytes(mdata, "big")
                if not data or not mdata or v >> w or m >> w or m == 0 or v & ~m:
                    return None
                got[pos] = (Ternary(v, m), (v, m), m, v, None)
            elif kind == "range":
                r = fm.range
                ldata, hdata = r.low, r.high
                lo, hi = int.from_bytes(ldata, "big"), int.from_bytes(hdata, "big")
                if not ldata or not hdata or lo >> w or hi >> w or lo > hi or (lo == 0 and hi == full):
                    return None
                got[pos] = (Range(lo, hi), (lo, hi), 0, 0, (lo, hi))
            else:   # optional
                data = fm.optional.value
                v = int.from_bytes(data, "big")
                if not data or v >> w:
                    return None
                got[pos] = (Optional_(v), v, full, v, None)
        matches = []
        canon = []
        mask = value = 0
        ranges = []
        widths = self.widths
        for pos, part in enumerate(got):
            if part is None:
                part = self.dont_care[pos]
                if part is None:            # an exact field left out
                    return None
            m, c, km, kv, rng = part
            matches.append(m)
            canon.append(c)
            w = widths[pos]
            mask = (mask << w) | km
            value = (value << w) | kv
            if rng is not None:
                ranges.append((pos, rng[0], rng[1]))
        return tuple(matches), (tuple(canon), priority), mask, value, tuple(ranges)

    def _single_exact_key(self, te: pb.TableEntry, priority: int) -> Optional[Key]:
        """:meth:`_key` of a table with one exact field (MAC, port and id tables), the
        same result without the per-field bookkeeping."""
        field_id, w, full = self.single_exact   # type: ignore[misc]
        ms = te.match
        if len(ms) != 1:
            return None
        fm = ms[0]
        if fm.field_id != field_id or fm.WhichOneof("field_match_type") != "exact":
            return None
        data = fm.exact.value
        v = int.from_bytes(data, "big")
        if not data or v >> w:
            return None
        return (Exact(v),), ((v,), priority), full, v, ()

    def _priority(self, te: pb.TableEntry) -> Optional[int]:
        p = te.priority
        if self.needs_priority:
            return p if 0 < p < _PRIORITY_LIMIT else None
        return 0 if p == 0 else None

    def _action(self, ta: pb.TableAction) -> Optional[ActionCall]:
        if ta.WhichOneof("type") != "action":
            return None
        a = ta.action
        plan = self.actions.get(a.action_id)
        if plan is None:
            return None
        name, params, count = plan
        args: list[Optional[int]] = [None] * count
        for p in a.params:
            info = params.get(p.param_id)
            if info is None:
                return None
            pos, w = info
            data = p.value
            v = int.from_bytes(data, "big")
            if args[pos] is not None or not data or v >> w:
                return None
            args[pos] = v
        if None in args:
            return None
        return ActionCall(name, tuple(args))  # type: ignore[arg-type]

    @staticmethod
    def _plain(te: pb.TableEntry) -> bool:
        """No field that the fast path leaves to the checked one (is_const, the default
        entry, per-colour counters, time_since_last_hit)."""
        return not (te.is_const or te.is_default_action or te.HasField("meter_counter_data")
                    or te.HasField("time_since_last_hit"))

    def _call(self, ta: pb.TableAction) -> Optional[ActionCall]:
        """:meth:`_action` through the plan's cache of serialized actions."""
        wire = ta.SerializeToString()
        call = self._calls.get(wire)
        if call is None:
            call = self._action(ta)
            if call is None:
                return None
            if len(self._calls) >= ACTION_CACHE_MAX:
                self._calls.clear()
            self._calls[wire] = call
        return call

    def decode_insert(self, te: pb.TableEntry) -> Optional[tuple[tuple[Any, ...], tuple, int, int, tuple, int,
                                                                    ActionCall]]:
        """(matches, identity, mask, value, ranges, priority, call) of a valid INSERT that
        sets nothing but the key, priority, a direct action, metadata and an idle timeout
        the table supports; None for anything else."""
        # :meth:`_plain`, :meth:`_entry_parts`, :meth:`_priority`, :meth:`_call` and
        # :meth:`_single_exact_key` written out in one body: the per-insert path of a
        # batch (TableStore.write_run), where each call was ~0.1 µs of ~2.6
        if te.is_const or te.is_default_action or te.HasField("meter_counter_data") \
                or te.HasField("time_since_last_hit") or te.HasField("counter_data") \
                or te.HasField("meter_config"):
            return None
        idle = te.idle_timeout_ns
        if idle and (idle < 0 or not self.support_timeout):
            return None
        priority = te.priority
        if self.needs_priority:
            if not 0 < priority < _PRIORITY_LIMIT:
                return None
        elif priority:
            return None
        ta = te.action
        call = self._calls.get(ta.SerializeToString())
        if call is None:
            call = self._call(ta)
            if call is None:
                return None
        single = self.single_exact
        if single is None:
            key = self._key(te, priority)
            if key is None:
                return None
            return key[0], key[1], key[2], key[3], key[4], priority, call
        ms = te.match
        if len(ms) != 1:
            return None
        fm = ms[0]
        field_id, w, full = single
        if fm.field_id != field_id or fm.WhichOneof("field_match_type") != "exact":
            return None
        data = fm.exact.value
        v = int.from_bytes(data, "big")
        if not data or v >> w:
            return None
        return (Exact(v),), ((v,), priority), full, v, (), priority, call

    def _entry_parts(self, te: pb.TableEntry) -> Optional[tuple[tuple, int, ActionCall]]:
        """(key, priority, call) of an entry whose idle timeout the table supports and
        whose priority, action and key decode; None otherwise (the checked path decides)."""
        idle = te.idle_timeout_ns
        if idle and (idle < 0 or not self.support_timeout):
            return None
        priority = self._priority(te)
        if priority is None:
            return None
        call = self._call(te.action)
        if call is None:
            return None
        key = self._key(te, priority)
        if key is None:
            return None
        return key, priority, call

    def decode_modify(self, te: pb.TableEntry) -> Optional[tuple[tuple[Any, ...], tuple, int, ActionCall]]:
        """(matches, identity, priority, call) of a valid MODIFY that gives a direct action
        and sets nothing else but metadata and an idle timeout the table supports, in a
        table without a direct meter (a MODIFY resets its cell: the checked path's); None
        for anything else."""
        if self.direct_meter or not self._plain(te) or te.HasField("counter_data") \
                or te.HasField("meter_config") or not te.HasField("action"):
            return None
        parts = self._entry_parts(te)
        if parts is None:
            return None
        key, priority, call = parts
        return key[0], key[1], priority, call

    def decode_delete(self, te: pb.TableEntry) -> Optional[tuple]:
        """The identity of a DELETE's key (valid key and priority), or None."""
        if not self._plain(te):
            return None
        priority = self._priority(te)
        if priority is None:
            return None
        key = self._key(te, priority)
        return None if key is None else key[1]

    # ------------------------------------------------------------------ from wire bytes
    # decode_insert / decode_modify / decode_delete of a WireEntry (wirewrites.parse_updates):
    # an update of a table with one exact or LPM field that sets the table id, that field
    # and at most an action, nothing else (so no priority, idle timeout, metadata,
    # is_const, default entry, counter or meter data: _plain holds). The same checks,
    # the same answers as from the message.
    def _wire_call(self, raw: Optional[bytes]) -> Optional[ActionCall]:
        """:meth:`_call` of a serialized TableAction (None: the entry has none)."""
        if raw is None:
            return None
        call = self._calls.get(raw)
        if call is None:
            try:
                ta = pb.TableAction.FromString(raw)
            except DecodeError:
                return None
            call = self._action(ta)
            if call is None:
                return None
            if len(self._calls) >= ACTION_CACHE_MAX:
                self._calls.clear()
            self._calls[raw] = call
        return call

    def _wire_key(self, w: WireEntry) -> Optional[Key]:
        """:meth:`_key` of the one match field of a WireEntry, priority 0 (None: declined)."""
        if self.needs_priority:                  # priority 0: refused where one is needed
            return None
        data, plen = w[2], w[4]
        if type(data) is tuple:                  # several exact fields, in position order
            multi = self.multi_exact
            if multi is None or plen >= 0 or len(data) != len(multi):
                return None
            vals = []
            mask = value = 0
            for d, (_fid, width, full) in zip(data, multi):
                v = int.from_bytes(d, "big")
                if not d or v >> width:
                    return None
                vals.append(v)
                mask = (mask << width) | full
                value = (value << width) | v
            return tuple(map(Exact, vals)), (tuple(vals), 0), mask, value, ()
        v = int.from_bytes(data, "big")  # type: ignore[arg-type]
        single = self.single_exact
        if single is not None:
            if plen >= 0 or not data or v >> single[1]:
                return None
            return (Exact(v),), ((v,), 0), single[2], v, ()
        single = self.single_lpm
        if single is None or plen < 0:
            return None
        _fid, width, full = single
        if not data or v >> width or plen <= 0 or plen > width or v & lpm_host_bits(plen, width):
            return None
        return (Lpm(v, plen),), (((v, plen),), 0), full ^ ((1 << (width - plen)) - 1), v, ()

    def wire_insert(self, w: WireEntry) -> Optional[tuple[tuple[Any, ...], tuple, int, int, tuple, int, ActionCall]]:
        """:meth:`decode_insert` of a :data:`~p4sim.p4runtime.wirewrites.WireEntry`.

        >>> plan.wire_insert((1, table_id, b"\\x0a", action_bytes, -1))    # doctest: +SKIP
        ((Exact(value=10),), ((10,), 0), 255, 10, (), 0, ActionCall(name='I.fwd', args=(1,)))
        """
        raw = w[3]
        call = self._calls.get(raw) if raw is not None else None
        if call is None:
            call = self._wire_call(raw)
            if call is None:
                return None
        key = self._wire_key(w)
        if key is None:
            return None
        return key[0], key[1], key[2], key[3], key[4], 0, call

    def wire_insert_items(self, wire: Sequence[Optional[WireEntry]], j: int, stop: int,
                          items: list[tuple]) -> int:
        """Append to ``items`` the ``Table.add_canonical_entries`` item of each of
        ``wire[j:stop]`` while it is an INSERT of this table that :meth:`wire_insert`
        takes (the same checks, written out for a table of one exact field); return the
        index of the first one that is not.

        >>> n = plan.wire_insert_items(wire, 0, len(wire), items)     # doctest: +SKIP
        """
        single = self.single_exact
        if single is None or self.needs_priority:
            return self._wire_insert_items(wire, j, stop, items)
        _fid, width, full = single
        table_id = self.ti.table_id
        calls = self._calls
        append = items.append
        from_bytes = int.from_bytes
        # Exact(v) less its frozen dataclass __init__ (object.__setattr__ through a Python
        # call): the same object, made by the slot's own setter, at half the cost
        new, exact, set_value = object.__new__, Exact, _EXACT_VALUE.__set__
        while j < stop:
            w = wire[j]
            if w is None or w[0] != _INSERT or w[1] != table_id or w[4] >= 0:
                break
            data = w[2]
            raw = w[3]
            call = calls.get(raw) if raw is not None else None
            if call is None:
                call = self._wire_call(raw)
                if call is None:
                    break
            if type(data) is tuple or not data:
                break
            v = from_bytes(data, "big")     # type: ignore[arg-type]
            if v >> width:
                break
            m = new(exact)
            set_value(m, v)
            append(((m,), call, 0, ((v,), 0), full, v, (), 0, b""))
            j += 1
        return j

    def _wire_insert_items(self, wire: Sequence[Optional[WireEntry]], j: int, stop: int,
                           items: list[tuple]) -> int:
        """:meth:`wire_insert_items` of any planned table, one :meth:`wire_insert` each."""
        table_id = self.ti.table_id
        while j < stop:
            w = wire[j]
            if w is None or w[0] != _INSERT or w[1] != table_id:
                break
            got = self.wire_insert(w)
            if got is None:
                break
            matches, ident, mask, value, ranges, priority, call = got
            items.append((matches, call, priority, ident, mask, value, ranges, 0, b""))
            j += 1
        return j

    def wire_modify(self, w: WireEntry) -> Optional[tuple[tuple[Any, ...], tuple, int, ActionCall]]:
        """:meth:`decode_modify` of a :data:`~p4sim.p4runtime.wirewrites.WireEntry`."""
        if self.direct_meter or w[3] is None:
            return None
        call = self._wire_call(w[3])
        if call is None:
            return None
        key = self._wire_key(w)
        if key is None:
            return None
        return key[0], key[1], 0, call

    def wire_delete(self, w: WireEntry) -> Optional[tuple]:
        """:meth:`decode_delete` of a :data:`~p4sim.p4runtime.wirewrites.WireEntry`."""
        key = self._wire_key(w)
        return None if key is None else key[1]


# --------------------------------------------------------------------------- building
def build_plan(index: ProgramIndex, ti: TableInfo, extras: bool) -> Optional[TablePlan]:
    """The plan of one table, or None when the checked path must serve all its writes."""
    t = ti.table
    if t.implementation is not None or t.is_const or (t.initial_entries and not extras) or t.mode == "keyless":
        return None
    mkeys = [k for k in t.keys if k.match_kind != "selector"]
    if len(mkeys) != len(ti.fields):
        return None
    fields: dict[int, tuple[int, str, int, int]] = {}
    dont_care: list[Optional[Part]] = []
    for pos, (f, kf) in enumerate(zip(ti.fields, mkeys)):
        if (f.translated or f.kind not in _KINDS or f.kind != kf.match_kind or f.pos != pos
                or f.width != kf.width or f.width <= 0):
            return None
        fields[f.field_id] = (pos, f.kind, f.width, (1 << f.width) - 1)
        if f.kind == "exact":
            dont_care.append(None)
        else:
            m = _DONT_CARE.get(f.kind) or Range(0, (1 << f.width) - 1)
            dont_care.append((m, *canonical_match(kf, m, f"table {ti.name}")))
    actions: dict[int, tuple[str, dict[int, tuple[int, int]], int]] = {}
    for aid, scope in ti.action_scopes.items():
        ai = index.actions.get(aid)
        spec = t.actions.get(ai.name) if ai is not None else None
        if ai is None or spec is None or scope == "default_only" or spec.scope == "default_only" or ai.translated:
            continue
        by_pos = sorted(ai.params.items(), key=lambda kv: kv[1][0])
        if [w for _pid, (_pos, _n, w) in by_pos] != [w for _n, w in spec.params] \
                or any(w <= 0 for _n, w in spec.params):
            continue
        actions[aid] = (ai.name, {pid: (pos, w) for pid, (pos, _n, w) in ai.params.items()}, len(ai.params))
    return TablePlan(ti, fields, tuple(kf.width for kf in mkeys), tuple(dont_care), actions)


def build_plans(index: ProgramIndex, extras: bool) -> dict[int, TablePlan]:
    """Plans of every table that can have one, by P4Info table id."""
    plans = {}
    for table_id, ti in index.tables.items():
        plan = build_plan(index, ti, extras)
        if plan is not None:
            plans[table_id] = plan
    return plans
