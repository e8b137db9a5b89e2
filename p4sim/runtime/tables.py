"""Match-action tables: entries, validation with P4Runtime error codes, and BMv2 lookup.

A :class:`Table` is built once from the program (keys, actions, default action, size,
implementation, direct resources) and then written by the control plane (P4Runtime
server, STF runner) and read per packet by the compiled program.

Conventions
-----------
* ``matches`` (writes) has one match value per **non-selector** key, in key order:
  :class:`Exact`, :class:`Lpm`, :class:`Ternary`, :class:`Range` or :class:`Optional_`
  as the key's match kind says. ``selector`` keys are not matched: they feed the
  :class:`~p4sim.runtime.action_profile.ActionSelector` hash.
* ``key_values`` (lookups) has one int per key, **selector keys included**, in key
  order, each already within its field width. A selector key may be None: the field
  belongs to an invalid header and, as in BMv2, is left out of the selector hash (p4c
  names the key fields directly in the selector's input and BMv2's calculation skips
  fields of invalid headers; ``hash()`` data is copied into temporaries first and is not
  skipped: see ``p4sim/engine/natives.py``, ``flat_fields``).
* Priorities follow P4Runtime: **a higher number wins**. Tables with a ternary, range
  or optional key need ``priority > 0``; other tables need ``priority == 0``
  (``INVALID_ARGUMENT`` otherwise; const entries loaded by the program may omit it).
* Entries with equal priority that both match: BMv2 scans entries in handle order and
  keeps the first with the best priority, so the one with the **lowest entry handle**
  wins. Handles are the lowest free index (a new entry can reuse a deleted entry's
  handle), as in BMv2.
* Tables whose keys are all ``exact`` use one dict lookup; tables with one ``lpm`` key
  and otherwise ``exact`` keys (no priority) use one dict per prefix length, longest
  first; all other tables scan entries by (priority desc, handle asc).
* A miss returns the current default action. Direct counters count, and direct meters
  run, on hits only (:meth:`Table.apply`), as in BMv2.

Validation codes (a failed call changes nothing): wrong number of matches or action
arguments, wrong match kind, unknown action, action scope violated, ``prefix_len`` out
of range, LPM value bits beyond the prefix, ternary value bits outside the mask,
``low > high`` → ``INVALID_ARGUMENT``; a value or argument wider than its field →
``OUT_OF_RANGE``; same key (and priority) twice → ``ALREADY_EXISTS``; modify/delete of
a missing entry → ``NOT_FOUND``; table full → ``RESOURCE_EXHAUSTED``; writes to a
``const entries`` table or a const default action → ``PERMISSION_DENIED``.

Example::

    >>> t = Table("MyIngress.ipv4_lpm", keys=[KeyField("hdr.ipv4.dstAddr", "lpm", 32)],
    ...           actions=[ActionSpec("MyIngress.fwd", [("port", 9)]), ActionSpec("MyIngress.drop")],
    ...           default_action=("MyIngress.drop", ()), size=16)
    >>> _ = t.add_entry([Lpm(0x0A000000, 8)], ActionCall("MyIngress.fwd", (1,)))
    >>> _ = t.add_entry([Lpm(0x0A000100, 24)], ActionCall("MyIngress.fwd", (2,)))
    >>> t.lookup((0x0A000105,)).action_args, t.lookup((0x0A020305,)).action_args
    ((2,), (1,))
    >>> t.lookup((0x0B000000,))[:1] + t.lookup((0x0B000000,))[2:]
    (False, 'MyIngress.drop', ())
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Optional, Sequence, Union

from p4sim.runtime.counters import CounterCell, DirectCounter
from p4sim.runtime.errors import RuntimeStateError, check_fits
from p4sim.runtime.meters import DirectMeter, MeterCell

if TYPE_CHECKING:
    from p4sim.runtime.action_profile import ActionProfile

MATCH_KINDS = ("exact", "lpm", "ternary", "range", "optional", "selector")
ACTION_SCOPES = ("table_and_default", "table_only", "default_only")
IDLE_TIMEOUT_UNSUPPORTED = "idle_timeout_ns must be set to 0 for tables which do not support idle timeout"
"""PI's text (simple_switch_grpc) for an entry with an idle timeout in a table without ``support_timeout``."""
CHANGE_LOG_MIN = 4096
"""Changes a :class:`Table` keeps in its log at the least (see :meth:`Table.changes_since`)."""


# --------------------------------------------------------------------------- declarations
@dataclass(frozen=True, slots=True)
class KeyField:
    """One table key: ``KeyField("hdr.ipv4.dstAddr", "lpm", 32)``."""

    name: str
    match_kind: str
    width: int

    def __post_init__(self) -> None:
        if self.match_kind not in MATCH_KINDS:
            raise ValueError(f"unknown match kind {self.match_kind!r} for key {self.name}")


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """An action a table may run: ``ActionSpec("MyIngress.fwd", [("port", 9)])``.

    ``scope`` is P4Runtime's: ``table_and_default``, ``table_only`` (``@tableonly``) or
    ``default_only`` (``@defaultonly``).
    """

    name: str
    params: Sequence[tuple[str, int]] = ()
    scope: str = "table_and_default"

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", tuple((str(n), int(w)) for n, w in self.params))
        if self.scope not in ACTION_SCOPES:
            raise ValueError(f"unknown action scope {self.scope!r} for {self.name}")


# --------------------------------------------------------------------------- match values
@dataclass(frozen=True, slots=True)
class Exact:
    """``exact`` match: ``Exact(0x0800)``."""

    value: int


@dataclass(frozen=True, slots=True)
class Lpm:
    """``lpm`` match: ``Lpm(0x0A000000, 8)`` (bits after the prefix must be zero)."""

    value: int
    prefix_len: int


@dataclass(frozen=True, slots=True)
class Ternary:
    """``ternary`` match: ``Ternary(0x0A000000, 0xFF000000)`` (value bits ⊆ mask)."""

    value: int
    mask: int


@dataclass(frozen=True, slots=True)
class Range:
    """``range`` match, both bounds inclusive: ``Range(1024, 2047)``."""

    low: int
    high: int


@dataclass(frozen=True, slots=True)
class Optional_:
    """``optional`` match: ``Optional_(6)`` matches 6, ``Optional_(None)`` anything."""

    value: Optional[int] = None


Match = Union[Exact, Lpm, Ternary, Range, Optional_]
_KIND_CLASS = {"exact": Exact, "lpm": Lpm, "ternary": Ternary, "range": Range, "optional": Optional_}


# --------------------------------------------------------------------------- actions
@dataclass(frozen=True, slots=True)
class ActionCall:
    """An action with its arguments: ``ActionCall("MyIngress.fwd", (3,))``."""

    name: str
    args: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.args, tuple):
            object.__setattr__(self, "args", tuple(self.args))


@dataclass(frozen=True, slots=True)
class MemberRef:
    """An entry of a table with an action profile/selector pointing at a member."""

    member_id: int


@dataclass(frozen=True, slots=True)
class GroupRef:
    """An entry of a table with an action selector pointing at a group."""

    group_id: int


EntryAction = Union[ActionCall, MemberRef, GroupRef]


def validate_action_call(specs: Mapping[str, ActionSpec], call: Any, where: str) -> ActionSpec:
    """Check that ``call`` names one of ``specs`` with arguments that fit; return its spec.

    Example::

        >>> specs = {"a": ActionSpec("a", [("p", 4)])}
        >>> validate_action_call(specs, ActionCall("a", (15,)), "t").name
        'a'
    """
    if not isinstance(call, ActionCall):
        raise RuntimeStateError("INVALID_ARGUMENT", f"{where}: expected an action call, got {call!r}")
    spec = specs.get(call.name)
    if spec is None:
        raise RuntimeStateError("INVALID_ARGUMENT", f"{where}: action {call.name!r} is not an action of it")
    if len(call.args) != len(spec.params):
        raise RuntimeStateError("INVALID_ARGUMENT",
                                f"{where}: action {call.name} takes {len(spec.params)} arguments, got {len(call.args)}")
    for (pname, width), arg in zip(spec.params, call.args):
        check_fits(arg, width, f"{where}: action {call.name} parameter {pname}")
    return spec


# --------------------------------------------------------------------------- entries
class LookupResult(NamedTuple):
    """What a lookup found. ``action_name`` None means no action runs."""

    hit: bool
    entry: Optional["TableEntryState"]
    action_name: Optional[str]
    action_args: tuple[int, ...]


_new_tuple = tuple.__new__
"""``_new_tuple(LookupResult, (hit, entry, name, args))``: a LookupResult made without
the named tuple's ``__new__`` (the same object)."""


@dataclass(slots=True, eq=False)
class TableEntryState:
    """One installed entry.

    ``counter`` / ``meter`` are the entry's direct counter / meter cells (None when the
    table has none). ``idle_timeout_ns`` and ``last_hit_ns`` serve P4Runtime idle
    timeouts (``last_hit_ns`` is updated by :meth:`Table.apply`). ``metadata`` is the
    P4Runtime entry cookie. The ``_``-prefixed fields are lookup data.
    """

    matches: tuple[Match, ...]
    priority: int
    action: EntryAction
    handle: int
    is_const: bool = False
    counter: Optional[CounterCell] = None
    meter: Optional[MeterCell] = None
    idle_timeout_ns: int = 0
    last_hit_ns: int = 0
    metadata: bytes = b""
    _ident: tuple = ()
    _mask: int = 0
    _value: int = 0
    _ranges: tuple = ()
    _result: Optional[LookupResult] = field(default=None, repr=False)


def canonical_match(kf: KeyField, m: Any, where: str) -> tuple[Any, int, int, Optional[tuple[int, int]]]:
    """Validate one match value of key ``kf``; return its canonical parts (identity,
    mask, value, range or None), from which :meth:`Table.add_entry` builds an entry's key.

    >>> canonical_match(KeyField("k", "lpm", 8), Lpm(0x0A, 7), "t")
    ((10, 7), 254, 10, None)
    """
    w = kf.width
    full = (1 << w) - 1
    cls = _KIND_CLASS[kf.match_kind]
    if not isinstance(m, cls):
        raise RuntimeStateError("INVALID_ARGUMENT",
                                f"{where}: key {kf.name} is {kf.match_kind}, got {type(m).__name__}")
    if isinstance(m, Exact):
        check_fits(m.value, w, f"{where}: key {kf.name}")
        return m.value, full, m.value, None
    if isinstance(m, Lpm):
        check_fits(m.value, w, f"{where}: key {kf.name}")
        if not 0 <= m.prefix_len <= w:
            raise RuntimeStateError("INVALID_ARGUMENT",
                                    f"{where}: key {kf.name}: prefix length {m.prefix_len} not in [0, {w}]")
        mask = full ^ ((1 << (w - m.prefix_len)) - 1)
        if m.value & ~mask:
            raise RuntimeStateError("INVALID_ARGUMENT",
                                    f"{where}: key {kf.name}: LPM value has bits set beyond the /{m.prefix_len} prefix")
        return (m.value, m.prefix_len), mask, m.value, None
    if isinstance(m, Ternary):
        check_fits(m.value, w, f"{where}: key {kf.name}")
        check_fits(m.mask, w, f"{where}: key {kf.name} mask")
        if m.value & ~m.mask:
            raise RuntimeStateError("INVALID_ARGUMENT",
                                    f"{where}: key {kf.name}: ternary value has bits set outside the mask")
        return (m.value, m.mask), m.mask, m.value, None
    if isinstance(m, Range):
        check_fits(m.low, w, f"{where}: key {kf.name} low")
        check_fits(m.high, w, f"{where}: key {kf.name} high")
        if m.low > m.high:
            raise RuntimeStateError("INVALID_ARGUMENT", f"{where}: key {kf.name}: range low > high")
        rng = None if (m.low == 0 and m.high == full) else (m.low, m.high)
        return (m.low, m.high), 0, 0, rng
    # Optional_
    if m.value is None:
        return None, 0, 0, None
    check_fits(m.value, w, f"{where}: key {kf.name}")
    return m.value, full, m.value, None


class Table:
    """A P4 table's runtime state (see the module docstring for conventions).

    ``default_action`` is ``(name, args)`` or an :class:`ActionCall` (None: no action on
    a miss). ``selector`` / ``profile`` give the table an implementation: entries then
    hold :class:`MemberRef` / :class:`GroupRef`.
    """

    def __init__(self, name: str, keys: Sequence[KeyField], actions: Sequence[ActionSpec],
                 default_action: Union[ActionCall, tuple[str, Sequence[int]], None] = None,
                 default_is_const: bool = False, size: int = 1024, is_const: bool = False,
                 selector: Optional["ActionProfile"] = None, profile: Optional["ActionProfile"] = None,
                 direct_counter: Optional[DirectCounter] = None, direct_meter: Optional[DirectMeter] = None,
                 support_timeout: bool = False) -> None:
        self.name = name
        self.keys = tuple(keys)
        self.actions: dict[str, ActionSpec] = {a.name: a for a in actions}
        self.size = size
        self.is_const = is_const
        #: the program gave the table initial ``entries`` (const or not): BMv2 then makes
        #: its entries immutable to the control plane (IMMUTABLE_TABLE_ENTRIES), which the
        #: P4Runtime server and the STF runner enforce; the in-process API does not
        self.initial_entries = False
        self.default_is_const = default_is_const
        self.implementation = selector if selector is not None else profile
        if self.implementation is not None and self.implementation.actions is None:
            self.implementation.actions = dict(self.actions)
        self.direct_counter = direct_counter
        self.direct_meter = direct_meter
        self.support_timeout = support_timeout
        self.last_meter_color: Optional[int] = None
        #: bumped by every change of the entries or the default action (the native path,
        #: :mod:`p4sim.native`, copies a table into its own lookup structures when it moves)
        self.version = 0
        # what moved the version from _log_base to version, oldest first (changes_since)
        self._log: list[tuple[str, Optional[TableEntryState]]] = []
        self._log_base = 0

        self._match_idx = tuple(i for i, k in enumerate(self.keys) if k.match_kind != "selector")
        self._sel_spec = tuple((i, k.width) for i, k in enumerate(self.keys) if k.match_kind == "selector")
        mkeys = [self.keys[i] for i in self._match_idx]
        self._mkeys = tuple(mkeys)
        kinds = [k.match_kind for k in mkeys]
        self.needs_priority = any(k in ("ternary", "range", "optional") for k in kinds)
        if not mkeys:
            self.mode = "keyless"
        elif all(k == "exact" for k in kinds):
            self.mode = "exact"
        elif kinds.count("lpm") == 1 and all(k in ("exact", "lpm") for k in kinds):
            self.mode = "lpm"
        else:
            self.mode = "general"
        self._needs_project = bool(self._sel_spec)

        self._entries: dict[int, TableEntryState] = {}          # handle -> entry
        self._by_ident: dict[tuple, TableEntryState] = {}
        self._exact: dict[tuple, TableEntryState] = {}
        self._lpm_pos = kinds.index("lpm") if self.mode == "lpm" else -1
        self._lpm_width = mkeys[self._lpm_pos].width if self.mode == "lpm" else 0
        self._lpm_dicts: dict[int, dict[tuple, TableEntryState]] = {}
        self._lpm_levels: list[tuple[int, int, dict[tuple, TableEntryState]]] = []
        self._sorted: list[TableEntryState] = []
        self._free_handles: list[int] = []
        self._next_handle = 0

        if default_action is None:
            init = None
        elif isinstance(default_action, ActionCall):
            init = default_action
        else:
            init = ActionCall(default_action[0], tuple(default_action[1]))
        if init is not None:
            self._check_default(init)
        self.initial_default_action: Optional[ActionCall] = init
        self.default_action: Optional[ActionCall] = init
        self._miss = self._make_miss()

        self._match = {"keyless": self._match_keyless, "exact": self._match_exact,
                       "lpm": self._match_lpm, "general": self._match_general}[self.mode]

    # ------------------------------------------------------------------ helpers
    def _where(self) -> str:
        return f"table {self.name}"

    def _make_miss(self) -> LookupResult:
        d = self.default_action
        return LookupResult(False, None, d.name if d else None, d.args if d else ())

    def _check_default(self, action: ActionCall) -> None:
        spec = validate_action_call(self.actions, action, f"{self._where()} default action")
        if spec.scope == "table_only":
            raise RuntimeStateError("INVALID_ARGUMENT",
                                    f"{self._where()}: action {action.name} is @tableonly, not a default action")

    def _check_action(self, action: Any) -> None:
        if self.implementation is not None:
            if isinstance(action, ActionCall):
                raise RuntimeStateError("INVALID_ARGUMENT",
                                        f"{self._where()}: entries of a table with an implementation "
                                        f"need a member or group, not an action")
            self.implementation.check_ref(action)
            return
        if isinstance(action, (MemberRef, GroupRef)):
            raise RuntimeStateError("INVALID_ARGUMENT", f"{self._where()}: table has no action profile")
        spec = validate_action_call(self.actions, action, self._where())
        if spec.scope == "default_only":
            raise RuntimeStateError("INVALID_ARGUMENT",
                                    f"{self._where()}: action {action.name} is @defaultonly")

    def _ident(self, matches: Sequence[Match], priority: int, const: bool
               ) -> tuple[tuple, int, int, tuple, int]:
        """Validate matches and priority; return (identity, mask, value, ranges, priority)."""
        where = self._where()
        if self.mode == "keyless":
            raise RuntimeStateError("INVALID_ARGUMENT", f"{where}: a table without match keys has no entries")
        if len(matches) != len(self._mkeys):
            raise RuntimeStateError("INVALID_ARGUMENT",
                                    f"{where}: expected {len(self._mkeys)} match fields, got {len(matches)}")
        if self.needs_priority:
            if priority <= 0 or priority >= 1 << 31:
                raise RuntimeStateError("INVALID_ARGUMENT",
                                        f"{where}: entries need a priority in [1, 2^31), got {priority}")
        elif priority != 0:
            if not const:
                raise RuntimeStateError("INVALID_ARGUMENT",
                                        f"{where}: entries of a table without ternary/range/optional keys "
                                        f"must have priority 0")
            priority = 0
        canon = []
        mask = value = 0
        ranges = []
        for pos, (kf, m) in enumerate(zip(self._mkeys, matches)):
            c, km, kv, rng = canonical_match(kf, m, where)
            canon.append(c)
            mask = (mask << kf.width) | km
            value = (value << kf.width) | kv
            if rng is not None:
                ranges.append((pos, rng[0], rng[1]))
        return (tuple(canon), priority), mask, value, tuple(ranges), priority

    def _find(self, matches: Sequence[Match], priority: int) -> TableEntryState:
        ident = self._ident(matches, priority, False)[0]
        entry = self._by_ident.get(ident)
        if entry is None:
            raise RuntimeStateError("NOT_FOUND", f"{self._where()}: no entry with this key")
        return entry

    def _result_for(self, entry: TableEntryState) -> Optional[LookupResult]:
        a = entry.action
        if isinstance(a, ActionCall):
            return LookupResult(True, entry, a.name, a.args)
        return None

    # ------------------------------------------------------------------ control plane
    def add_entry(self, matches: Sequence[Match], action: EntryAction, priority: int = 0, *,
                  const: bool = False, idle_timeout_ns: int = 0, metadata: bytes = b"") -> TableEntryState:
        """Insert an entry. ``const=True`` is for the program's own ``const entries``."""
        if self.is_const and not const:
            raise RuntimeStateError("PERMISSION_DENIED", f"{self._where()}: table has const entries")
        ident, mask, value, ranges, priority = self._ident(matches, priority, const)
        self._check_action(action)
        if idle_timeout_ns and not self.support_timeout:
            raise RuntimeStateError("INVALID_ARGUMENT", IDLE_TIMEOUT_UNSUPPORTED)
        if ident in self._by_ident:
            raise RuntimeStateError("ALREADY_EXISTS", f"{self._where()}: an entry with this key already exists")
        if len(self._entries) >= self.size:
            raise RuntimeStateError("RESOURCE_EXHAUSTED", f"{self._where()}: table full ({self.size} entries)")
        return self._install(tuple(matches), action, priority, const, idle_timeout_ns, metadata,
                             ident, mask, value, ranges)

    def add_canonical_entry(self, matches: tuple[Match, ...], action: ActionCall, priority: int,
                            ident: tuple, mask: int, value: int, ranges: tuple,
                            idle_timeout_ns: int = 0, metadata: bytes = b"") -> Optional[TableEntryState]:
        """:meth:`add_entry` (``const=False``) for a caller that has already made every
        check of it and computed the key's canonical form as :meth:`_ident` does
        (``ident, mask, value, ranges``): the P4Runtime server's per-table write plans
        (:mod:`p4sim.p4runtime.entities_fast`), whose equivalence with :meth:`add_entry`
        is pinned by tests/p4sim/p4runtime/test_entities_fast.py. Only the checks that
        depend on the table's contents are made here: the key already present or the
        table full return None with nothing changed (the caller then takes
        :meth:`add_entry` for its error)."""
        if ident in self._by_ident or len(self._entries) >= self.size:
            return None
        return self._install(matches, action, priority, False, idle_timeout_ns, metadata,
                             ident, mask, value, ranges)

    def add_canonical_entries(self, items: Sequence[tuple], clock_ns: Optional[Callable[[], int]] = None) -> int:
        """:meth:`add_canonical_entry` for each of ``items`` in order, in one call: each
        item is ``(matches, action, priority, ident, mask, value, ranges, idle_timeout_ns,
        metadata)``; stops at the first whose key is present or that finds the table full
        (nothing changed for it) and returns how many were installed. ``clock_ns`` (when
        given) stamps each new entry's ``last_hit_ns``, as a P4Runtime insert does.

        >>> t = Table("t", [KeyField("k", "exact", 8)], [ActionSpec("a")], size=2)
        >>> item = lambda v: ((Exact(v),), ActionCall("a"), 0, ((v,), 0), 255, v, (), 0, b"")
        >>> t.add_canonical_entries([item(1), item(2), item(3)]), len(t)
        (2, 2)
        """
        if self.mode == "exact" and self.implementation is None and self.direct_counter is None \
                and self.direct_meter is None:
            return self._add_exact_entries(items, clock_ns)
        by_ident, entries, size = self._by_ident, self._entries, self.size
        install = self._install
        done = 0
        for matches, action, priority, ident, mask, value, ranges, idle_timeout_ns, metadata in items:
            if ident in by_ident or len(entries) >= size:
                break
            entry = install(matches, action, priority, False, idle_timeout_ns, metadata, ident, mask, value, ranges)
            if clock_ns is not None:
                entry.last_hit_ns = clock_ns()
            done += 1
        return done

    def _add_exact_entries(self, items: Sequence[tuple], clock_ns: Optional[Callable[[], int]]) -> int:
        """:meth:`add_canonical_entries` of a table in ``exact`` mode without an action
        profile or direct resources: what :meth:`_install`, :meth:`_index_add` and
        :meth:`_changed` do for each item, written out in one loop (the change log trimmed
        once at the end, to the same bound)."""
        by_ident, entries, exact, size = self._by_ident, self._entries, self._exact, self.size
        free, log = self._free_handles, self._log
        heappop = heapq.heappop
        new_entry, new_tuple, call_type = TableEntryState, _new_tuple, ActionCall
        done = 0
        room = size - len(entries)
        try:     # the version counts what went in even if the clock raised
            for matches, action, priority, ident, mask, value, ranges, idle_timeout_ns, metadata in items:
                if done >= room or ident in by_ident:
                    break
                now = 0 if clock_ns is None else clock_ns()
                if free:
                    handle = heappop(free)
                else:
                    handle = self._next_handle
                    self._next_handle = handle + 1
                entry = new_entry(matches, priority, action, handle, False, None, None, idle_timeout_ns, now,
                                  metadata, ident, mask, value, ranges)
                entry._result = new_tuple(LookupResult, (True, entry, action.name, action.args)) \
                    if type(action) is call_type else self._result_for(entry)
                entries[handle] = entry
                by_ident[ident] = entry
                exact[ident[0]] = entry
                log.append(("add", entry))
                done += 1
        finally:
            self.version += done
        if len(log) > max(CHANGE_LOG_MIN, 2 * len(entries)):
            drop = len(log) // 2
            del log[:drop]
            self._log_base += drop
        return done

    def _install(self, matches: tuple[Match, ...], action: EntryAction, priority: int, const: bool,
                 idle_timeout_ns: int, metadata: bytes, ident: tuple, mask: int, value: int,
                 ranges: tuple) -> TableEntryState:
        """The entry of a validated insert, installed (no failure past this point)."""
        handle = heapq.heappop(self._free_handles) if self._free_handles else self._next_handle
        if handle == self._next_handle:
            self._next_handle += 1
        # positional (TableEntryState's field order): keywords cost ~0.3 µs an insert
        entry = TableEntryState(
            matches, priority, action, handle, const,
            self.direct_counter.new_cell() if self.direct_counter else None,
            self.direct_meter.new_cell() if self.direct_meter else None,
            idle_timeout_ns, 0, metadata, ident, mask, value, ranges)
        # tuple.__new__ straight: LookupResult's own __new__ is a Python call (~0.2 µs)
        entry._result = _new_tuple(LookupResult, (True, entry, action.name, action.args)) \
            if type(action) is ActionCall else self._result_for(entry)
        if self.implementation is not None:
            self.implementation.add_ref(action)
        self._entries[handle] = entry
        self._by_ident[ident] = entry
        self._index_add(entry)
        return entry

    def modify_entry(self, matches: Sequence[Match], action: EntryAction, priority: int = 0) -> TableEntryState:
        """Change the action of an existing entry (counters and handle are kept)."""
        if self.is_const:
            raise RuntimeStateError("PERMISSION_DENIED", f"{self._where()}: table has const entries")
        entry = self._find(matches, priority)
        if entry.is_const:
            raise RuntimeStateError("PERMISSION_DENIED", f"{self._where()}: entry is const")
        self._check_action(action)
        if self.implementation is not None:
            self.implementation.add_ref(action)
            self.implementation.drop_ref(entry.action)
        entry.action = action
        entry._result = self._result_for(entry)
        self._changed("modify", entry)
        return entry

    def modify_canonical_entry(self, ident: tuple, action: ActionCall
                               ) -> Optional[tuple[TableEntryState, EntryAction]]:
        """:meth:`modify_entry` by the canonical identity :meth:`_ident` gives a key, for a
        caller that has checked ``action`` as :meth:`add_canonical_entry`'s callers do: (the
        entry, its previous action), or None with nothing changed when there is no such
        entry, it or the table is const, or the table has an action profile (the caller
        then takes :meth:`modify_entry` for its error)."""
        entry = self._by_ident.get(ident)
        if entry is None or entry.is_const or self.is_const or self.implementation is not None:
            return None
        old = entry.action
        entry.action = action
        entry._result = self._result_for(entry)
        self._changed("modify", entry)
        return entry, old

    def delete_entry(self, matches: Sequence[Match], priority: int = 0) -> TableEntryState:
        """Remove an entry; its handle becomes free for reuse. Returns the removed entry."""
        if self.is_const:
            raise RuntimeStateError("PERMISSION_DENIED", f"{self._where()}: table has const entries")
        entry = self._find(matches, priority)
        if entry.is_const:
            raise RuntimeStateError("PERMISSION_DENIED", f"{self._where()}: entry is const")
        self._remove(entry)
        return entry

    def delete_canonical_entry(self, ident: tuple) -> Optional[TableEntryState]:
        """:meth:`delete_entry` by the canonical identity :meth:`_ident` gives a key (for
        the callers of :meth:`add_canonical_entry`): the removed entry, or None with nothing
        changed when there is no such entry, it is const or the table is (the caller then
        takes :meth:`delete_entry` for its error)."""
        entry = self._by_ident.get(ident)
        if entry is None or entry.is_const or self.is_const:
            return None
        self._remove(entry)
        return entry

    def _remove(self, entry: TableEntryState) -> None:
        if self.implementation is not None:
            self.implementation.drop_ref(entry.action)
        del self._entries[entry.handle]
        del self._by_ident[entry._ident]
        self._index_remove(entry)
        heapq.heappush(self._free_handles, entry.handle)
        # the result refers to the entry: left set, a removed entry would be a reference
        # cycle, freed only by a full pass of the cyclic collector (~20-40 ms a pass with
        # a pipeline loaded); lookups no longer find it, and a restore makes it again
        entry._result = None

    def clear(self) -> None:
        """Delete every entry that the program did not declare const."""
        for entry in [e for e in self._entries.values() if not e.is_const]:
            self._remove(entry)

    def get_entry(self, matches: Sequence[Match], priority: int = 0) -> Optional[TableEntryState]:
        """The entry with exactly this key (and priority), or None."""
        ident = self._ident(matches, priority, False)[0]
        return self._by_ident.get(ident)

    def entries(self) -> list[TableEntryState]:
        """All entries in handle order."""
        return [self._entries[h] for h in sorted(self._entries)]

    def __len__(self) -> int:
        return len(self._entries)

    def set_default_action(self, action: Union[ActionCall, tuple[str, Sequence[int]]]) -> None:
        """Change the action run on a miss (``PERMISSION_DENIED`` if declared const)."""
        if not isinstance(action, ActionCall):
            action = ActionCall(action[0], tuple(action[1]))
        if self.default_is_const:
            raise RuntimeStateError("PERMISSION_DENIED", f"{self._where()}: default action is const")
        self._check_default(action)
        self.default_action = action
        self._miss = self._make_miss()
        self._changed("default", None)

    def reset_default_action(self) -> None:
        """Back to the program's default action."""
        self.default_action = self.initial_default_action
        self._miss = self._make_miss()
        self._changed("default", None)

    # ------------------------------------------------------------------ change log
    def _changed(self, kind: str, entry: Optional[TableEntryState]) -> None:
        """Every change of the entries or the default action: the version moves by one and
        the change is logged. The log keeps at least the last ``max(CHANGE_LOG_MIN, 2 *
        len(self))`` changes (past that its older half goes: a reader that far behind
        copies the whole table, which costs no more than reading that many changes)."""
        self.version += 1
        log = self._log
        log.append((kind, entry))
        if len(log) > max(CHANGE_LOG_MIN, 2 * len(self._entries)):
            drop = len(log) // 2
            del log[:drop]
            self._log_base += drop

    def changes_since(self, version: int) -> Optional[list[tuple[str, Optional[TableEntryState]]]]:
        """The changes that moved :attr:`version` from ``version`` to now, oldest first:
        ``("add" | "remove" | "modify", entry)`` (an entry inserted or put back, removed, given
        a new action) or ``("default", None)``; None when they are no longer all logged (a
        reader such as :mod:`p4sim.native` then copies the whole table).

        >>> t = Table("t", [KeyField("k", "exact", 8)], [ActionSpec("a")])
        >>> v = t.version; e = t.add_entry([Exact(1)], ActionCall("a")); _ = t.delete_entry([Exact(1)])
        >>> [(kind, got is e) for kind, got in t.changes_since(v)]
        [('add', True), ('remove', True)]
        """
        if version < self._log_base or version > self.version:
            return None
        return self._log[version - self._log_base:]

    # ------------------------------------------------------------------ indexes
    def _lpm_split(self, entry: TableEntryState) -> tuple[int, tuple]:
        canon = entry._ident[0]
        pos = self._lpm_pos
        value, plen = canon[pos]
        return plen, (canon[:pos] + canon[pos + 1:], value)

    def _rebuild_lpm_levels(self) -> None:
        w = self._lpm_width
        full = (1 << w) - 1
        self._lpm_levels = [(plen, full ^ ((1 << (w - plen)) - 1), d)
                            for plen, d in sorted(self._lpm_dicts.items(), reverse=True) if d]

    def _index_add(self, entry: TableEntryState) -> None:
        self._changed("add", entry)
        if self.mode == "exact":
            self._exact[entry._ident[0]] = entry
        elif self.mode == "lpm":
            plen, key = self._lpm_split(entry)
            d = self._lpm_dicts.setdefault(plen, {})
            d[key] = entry
            if len(d) == 1:
                self._rebuild_lpm_levels()
        elif self.mode == "general":
            lst = self._sorted
            k = (-entry.priority, entry.handle)
            lo, hi = 0, len(lst)
            while lo < hi:
                mid = (lo + hi) // 2
                if (-lst[mid].priority, lst[mid].handle) < k:
                    lo = mid + 1
                else:
                    hi = mid
            lst.insert(lo, entry)

    def _index_remove(self, entry: TableEntryState) -> None:
        self._changed("remove", entry)
        if self.mode == "exact":
            del self._exact[entry._ident[0]]
        elif self.mode == "lpm":
            plen, key = self._lpm_split(entry)
            d = self._lpm_dicts[plen]
            del d[key]
            if not d:
                self._rebuild_lpm_levels()
        elif self.mode == "general":
            self._sorted.remove(entry)

    # ------------------------------------------------------------------ data plane
    def _project(self, key_values: Sequence[int]) -> tuple:
        if self._needs_project:
            return tuple(key_values[i] for i in self._match_idx)
        return key_values if type(key_values) is tuple else tuple(key_values)

    def _match_keyless(self, key_values: Sequence[int]) -> Optional[TableEntryState]:
        return None

    def _match_exact(self, key_values: Sequence[int]) -> Optional[TableEntryState]:
        return self._exact.get(self._project(key_values))

    def _match_lpm(self, key_values: Sequence[int]) -> Optional[TableEntryState]:
        mk = self._project(key_values)
        pos = self._lpm_pos
        v = mk[pos]
        rest = mk[:pos] + mk[pos + 1:]
        for _plen, mask, d in self._lpm_levels:
            e = d.get((rest, v & mask))
            if e is not None:
                return e
        return None

    def _match_general(self, key_values: Sequence[int]) -> Optional[TableEntryState]:
        mk = self._project(key_values)
        packed = 0
        for kf, v in zip(self._mkeys, mk):
            packed = (packed << kf.width) | v
        for e in self._sorted:
            if (packed & e._mask) == e._value:
                if not e._ranges:
                    return e
                for pos, lo, hi in e._ranges:
                    if not lo <= mk[pos] <= hi:
                        break
                else:
                    return e
        return None

    def lookup(self, key_values: Sequence[int]) -> LookupResult:
        """Match ``key_values`` (one int per key, selector keys included). No side effects."""
        entry = self._match(key_values)
        if entry is None:
            return self._miss
        res = entry._result
        if res is not None:
            return res
        return self._resolve_indirect(entry, key_values)

    def _resolve_indirect(self, entry: TableEntryState, key_values: Sequence[int]) -> LookupResult:
        impl = self.implementation
        assert impl is not None
        a = entry.action
        if isinstance(a, MemberRef):
            call = impl.members[a.member_id].action
            return LookupResult(True, entry, call.name, call.args)
        # None marks a field of an invalid header: BMv2 leaves it out of the hash input.
        fields = [(v, w) for i, w in self._sel_spec if (v := key_values[i]) is not None]
        member = impl.select(a.group_id, fields)  # type: ignore[attr-defined, union-attr]
        if member is None:   # empty group: BMv2 runs no action
            return LookupResult(True, entry, None, ())
        return LookupResult(True, entry, member.action.name, member.action.args)

    def apply(self, key_values: Sequence[int], nbytes: int = 0, now_us: int = 0) -> LookupResult:
        """:meth:`lookup` plus BMv2's per-hit side effects: the entry's direct counter
        counts the packet (``nbytes`` long), its direct meter runs and leaves the colour
        in :attr:`last_meter_color` (None on a miss), and ``last_hit_ns`` is updated."""
        res = self.lookup(key_values)
        entry = res.entry
        if entry is None:
            self.last_meter_color = None
            return res
        if entry.counter is not None:
            entry.counter.count(nbytes)
        if entry.meter is not None:
            units = 1 if self.direct_meter is None or self.direct_meter.unit == "packets" else nbytes
            self.last_meter_color = entry.meter.execute(units, now_us)
        else:
            self.last_meter_color = None
        entry.last_hit_ns = now_us * 1000
        return res
