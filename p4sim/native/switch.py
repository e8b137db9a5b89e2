"""The native switch: :class:`NativeSwitch` runs a program's generated C through ctypes
with the API of :class:`p4sim.v1model.switch.V1ModelSwitch` (``process_packet``,
``run_ingress``/``run_egress``, ``stats``), plus :meth:`NativeSwitch.process_batch`.

Runtime state stays the program's own objects (``program.state``), the ones the P4Runtime
server and the STF runner read and write, so every read, write and digest behaves as on
the Python engine:

* registers and indexed counters: their cells ARE the C arrays (the Python objects'
  ``_cells`` / ``_packets`` / ``_bytes`` become ctypes arrays the C code writes);
* tables: C holds each entry in a slot; before every call the entries a table's change
  log (``Table.changes_since``) names since the last call are removed from, put into or
  changed in C, in one call each (``p4n_table_del`` / ``p4n_table_put``: flat arrays, not
  one ctypes call per entry); ``last_hit_ns`` of the entries hit is written back after it;
* action profiles, value sets, custom CRC parameters: copied into C whenever they changed
  (``ActionProfile.version``), checked before every call;
* direct counters and meters of a hit, meters, the packet replication engine (multicast,
  clone sessions), digests and an injected clock: the C code calls back into Python, which
  runs the very same runtime methods the Python engine runs;
* ``random()``: the C code continues the program's own Mersenne Twister (``program.rng``).

Example::

    >>> sw = NativeSwitch(load_program("fwd.p4"))        # doctest: +SKIP
    >>> sw.process_packet(1, frame)                      # doctest: +SKIP
    [(2, b'...')]
"""
from __future__ import annotations

import ctypes
import threading
from array import array
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from p4sim.frontend.types import BoolT, EnumT, strip_new
from p4sim.native.build import NativeBuildError, build
from p4sim.native.translate import NativeUnsupported, TranslatedUnit, translate
from p4sim.runtime import hashes as H
from p4sim.runtime.tables import ActionCall, Exact, GroupRef, Lpm, MemberRef, Optional_, Range, Ternary
from p4sim.v1model.sessions import clone_copies, clone_truncation, replicate
from p4sim.v1model.switch import EgressResult, QueueMeta, SwitchStats

MODES = {"keyless": 0, "exact": 1, "lpm": 2, "general": 3}
STATIC_HASHES = {H.crc16: 1, H.crc32: 2, H.crc_ccitt: 3, H.csum16: 4, H.xor16: 5, H.xor32: 6, H.identity: 7}
CUSTOM = 8
MASK128 = (1 << 128) - 1

_u64p = ctypes.POINTER(ctypes.c_uint64)
_i64p = ctypes.POINTER(ctypes.c_int64)
_CLOCK = ctypes.CFUNCTYPE(ctypes.c_int64)
_METER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
_HIT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
_DIGEST = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, _u64p, ctypes.c_int64)
_PRE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int64, _i64p, ctypes.c_int)


class _Out(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int64), ("cap", ctypes.c_int64), ("port", _i64p), ("off", _i64p),
                ("len", _i64p), ("src", _i64p), ("buf", ctypes.c_void_p), ("used", ctypes.c_int64),
                ("bufcap", ctypes.c_int64)]


@dataclass
class NativeProgram:
    """A program's translation and its loaded shared object (one per program object)."""

    unit: TranslatedUnit
    lib: ctypes.CDLL
    path: str


_LOAD_LOCK = threading.Lock()


def native_program(program: Any) -> NativeProgram:
    """Translate and compile ``program`` once (kept on the program object); raises
    :class:`~p4sim.native.translate.NativeUnsupported` or
    :class:`~p4sim.native.build.NativeBuildError`. Several programs may build at once
    (the compiler runs outside any lock)."""
    cached = getattr(program, "_native_program", None)
    if isinstance(cached, NativeProgram):
        return cached
    if isinstance(cached, Exception):
        raise cached
    try:
        try:
            unit = translate(program)
            so = build(unit.c_source, getattr(program, "path", "program"))
            with _LOAD_LOCK:
                lib = ctypes.CDLL(str(so))
                _declare(lib)
        except (NativeUnsupported, NativeBuildError):
            raise
        except Exception as exc:   # a translator bug, a shared object that does not load: never a crash
            raise NativeUnsupported(f"the native path failed ({type(exc).__name__}: {exc})") from exc
    except Exception as exc:
        program._native_program = exc
        raise
    native = NativeProgram(unit, lib, str(so))
    with _LOAD_LOCK:
        cached = getattr(program, "_native_program", None)
        if isinstance(cached, NativeProgram):
            return cached
        program._native_program = native
    return native


def _declare(lib: ctypes.CDLL) -> None:
    vp, i64, i32, u64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_uint64
    ip = ctypes.POINTER(ctypes.c_int)
    lib.p4n_new.restype = vp
    lib.p4n_new.argtypes = [i32] * 6
    lib.p4n_set_options.argtypes = [vp, i64, i64, i64]
    lib.p4n_set_reuse.argtypes = [vp, i32]
    lib.p4n_set_callbacks.argtypes = [vp, _CLOCK, _METER, _HIT, _DIGEST, _PRE]
    lib.p4n_set_rng.argtypes = [vp, ctypes.POINTER(ctypes.c_uint32), i32]
    lib.p4n_set_register.argtypes = [vp, i32, i64, i32, _u64p]
    lib.p4n_set_counter.argtypes = [vp, i32, i64, _u64p, _u64p]
    lib.p4n_set_hash.argtypes = [vp, i32, i32, i32, u64, u64, u64, i32, i32]
    lib.p4n_prof_hash.argtypes = [vp, i32, i32, i32, u64, u64, u64, i32, i32]
    lib.p4n_table_config.argtypes = [vp, i32, i32, i32, i32, ip, i32, ip, ip, i32, i32, i32, i32]
    lib.p4n_table_clear.argtypes = [vp, i32]
    lib.p4n_table_del.argtypes = [vp, i32, i32, _i64p]
    lib.p4n_table_put.argtypes = [vp, i32, i32, _u64p]
    lib.p4n_table_default.argtypes = [vp, i32, i32, i32, _u64p]
    lib.p4n_table_commit.argtypes = [vp, i32]
    lib.p4n_table_dump.argtypes = [vp, i32, _u64p, i64]
    lib.p4n_table_dump.restype = i64
    lib.p4n_prof_reset.argtypes = [vp, i32, i32, i32]
    lib.p4n_prof_member.argtypes = [vp, i32, i32, i64, i32, i32, _u64p]
    lib.p4n_prof_group.argtypes = [vp, i32, i32, i64, i32, ip]
    lib.p4n_prof_commit.argtypes = [vp, i32]
    lib.p4n_vs_set.argtypes = [vp, i32, i32, _u64p, _u64p]
    lib.p4n_take_hits.argtypes = [vp, _i64p, i32]
    lib.p4n_take_hits.restype = i32
    lib.p4n_pending_hits.argtypes = [vp]
    lib.p4n_out.argtypes = [vp]
    lib.p4n_out.restype = ctypes.POINTER(_Out)
    lib.p4n_stats.argtypes = [vp, _i64p]
    lib.p4n_take_errors.argtypes = [vp, ctypes.POINTER(ctypes.c_int32), i32]
    lib.p4n_process.argtypes = [vp, i64, ctypes.c_char_p, i64]
    lib.p4n_process_batch.argtypes = [vp, i32, _i64p, ctypes.POINTER(ctypes.c_char_p), _i64p]
    lib.p4n_run_ingress.argtypes = [vp, i64, ctypes.c_char_p, i64]
    lib.p4n_run_egress.argtypes = [vp, vp, i32, i64, i64, i64]
    lib.p4n_work.argtypes = [vp, i32]
    lib.p4n_work.restype = vp
    lib.p4n_nwork.argtypes = [vp]
    lib.p4n_item_info.argtypes = [vp, _i64p]
    lib.p4n_item_free.argtypes = [vp, vp]


def _take_slot(slots: list[Any], slot_of: dict[int, int], free: list[int], entry: Any) -> int:
    """Put ``entry`` in a free slot of its table's C copy (the last freed, else a new one at
    the end), record it in ``slots`` and ``slot_of`` (by the entry's id), return the slot.

    >>> slots, slot_of, free = [None, "a"], {}, [0]
    >>> e = object()
    >>> _take_slot(slots, slot_of, free, e), _take_slot(slots, slot_of, free, "b")
    (0, 2)
    >>> slot_of[id(e)], free
    (0, [])
    """
    if free:
        slot = free.pop()
        slots[slot] = entry
    else:
        slot = len(slots)
        slots.append(entry)
    slot_of[id(entry)] = slot
    return slot


def _u128s(values: Sequence[int]) -> Any:
    arr = (ctypes.c_uint64 * (2 * max(1, len(values))))()
    for i, v in enumerate(values):
        v &= MASK128
        arr[2 * i] = v & 0xFFFFFFFFFFFFFFFF
        arr[2 * i + 1] = v >> 64
    return arr


def _ints(values: Sequence[int]) -> Any:
    return (ctypes.c_int * max(1, len(values)))(*values)


M64 = (1 << 64) - 1


def _lohi(v: int) -> tuple[int, int]:
    """A value as C's two 64-bit words (low first), cut to 128 bits as :func:`_u128s` does."""
    v &= MASK128
    return v & M64, v >> 64


def _from_lohi(lo: int, hi: int) -> int:
    v = lo | (hi << 64)
    return v - (1 << 128) if v >> 127 else v


def _hash_params(fn: Any) -> tuple[int, int, int, int, int, int, int]:
    if isinstance(fn, H.CustomCrc):
        poly, init, xorout, ri, ro = fn.config()
        return CUSTOM, fn.width, poly, init, xorout, int(ri), int(ro)
    kind = STATIC_HASHES.get(fn)
    if kind is None:
        raise ValueError(f"hash function {fn!r} has no C implementation")
    return kind, 0, 0, 0, 0, 0, 0


class NativeWork:
    """A packet in an egress queue (the native counterpart of ``EgressWork``): the C side
    holds it; ``port``, ``priority``, ``packet_id``, ``copy_id`` are what the traffic
    manager and the trace read."""

    __slots__ = ("handle", "port", "priority", "packet_id", "copy_id", "length_reg", "_sw", "__weakref__")

    def __init__(self, sw: "NativeSwitch", handle: int, info: Sequence[int]) -> None:
        self._sw = sw
        self.handle = handle
        self.port, self.priority, self.packet_id, self.copy_id, self.length_reg = (int(x) for x in info[:5])

    @property
    def length(self) -> int:
        return self.length_reg

    def take(self) -> int:
        h, self.handle = self.handle, 0
        return h

    def __del__(self) -> None:
        h = self.handle
        if h and self._sw is not None and self._sw._sw:
            self.handle = 0
            try:
                self._sw._lib.p4n_item_free(self._sw._sw, h)
            except Exception:
                pass


class NativeSwitch:
    """``V1ModelSwitch`` on the native path (see the module docstring). ``log`` must be
    None: the native path writes no per-packet trace (use the Python engine for that).
    ``clock`` as in V1ModelSwitch (None: the monotonic clock from now, or from
    ``clock_start_ns``); ``reuse_headers`` as in V1ModelSwitch: a new packet takes the
    headers of the last packet that left, all invalid (BMv2's PHV pool, c/rt_driver.h)."""

    def __init__(self, program: Any, cpu_port: Optional[int] = None, log: Optional[Callable[[str], None]] = None, *,
                 clock: Optional[Callable[[], int]] = None, priority_queues: int = 1,
                 max_repasses: Optional[int] = None, on_digest: Optional[Callable[[], None]] = None,
                 clock_start_ns: Optional[int] = None, reuse_headers: bool = True) -> None:
        # reuse_headers as in V1ModelSwitch: BMv2's PHV pool (the default) or fresh headers
        self.reuse_headers = reuse_headers
        if log is not None:
            raise ValueError("the native path writes no per-packet trace (log must be None)")
        self.program = program
        self.cpu_port = cpu_port
        self.log = None
        self.priority_queues = priority_queues
        self.max_repasses = max_repasses
        self.on_digest = on_digest
        self.stats = SwitchStats()
        self.engine = "native"
        self.native = native_program(program)
        self._lib = lib = self.native.lib
        u = self.native.unit
        self._unit = u
        self._lock = threading.Lock()
        self._cb_exc: Optional[BaseException] = None
        st = program.state
        self._tables = list(u.tables)
        self._profiles: list[Any] = []
        for t in self._tables:
            if t.implementation is not None and all(p is not t.implementation for p in self._profiles):
                self._profiles.append(t.implementation)
        self._sw = lib.p4n_new(len(self._tables), len(self._profiles), len(u.registers), len(u.counters),
                               len(u.value_sets), len(u.hashes))
        if not self._sw:
            raise MemoryError("p4n_new failed")
        if clock is None:
            start = time.monotonic_ns() if clock_start_ns is None else clock_start_ns
            self.clock = lambda: (time.monotonic_ns() - start) // 1000  # noqa: E731
            self._clock_cb = ctypes.cast(None, _CLOCK)
        else:
            start = 0
            self.clock = clock
            self._clock_cb = _CLOCK(self._cb_clock)
        lib.p4n_set_options(self._sw, start, priority_queues,
                            (1 << 63) - 1 if max_repasses is None else max_repasses)   # None: no limit, as on BMv2
        lib.p4n_set_reuse(self._sw, int(bool(reuse_headers)))
        self._meter_cb = _METER(self._cb_meter)
        self._hit_cb = _HIT(self._cb_hit)
        self._digest_cb = _DIGEST(self._cb_digest)
        self._pre_cb = _PRE(self._cb_pre)
        lib.p4n_set_callbacks(self._sw, self._clock_cb, self._meter_cb, self._hit_cb, self._digest_cb, self._pre_cb)
        self._pre = st.pre
        self._digests = st.digests
        self._strings = u.strings
        self._share_cells()
        for i, fn in enumerate(u.hashes):
            lib.p4n_set_hash(self._sw, i, *_hash_params(fn))
        self._custom = [(i, fn) for i, fn in enumerate(u.hashes) if isinstance(fn, H.CustomCrc)]
        self._custom_cfg = [fn.config() for _, fn in self._custom]
        state = program.rng.getstate()[1]
        mt = (ctypes.c_uint32 * 624)(*state[:624])
        lib.p4n_set_rng(self._sw, mt, state[624])
        self._sid = {s: i + 1 for i, s in enumerate(u.strings)}
        # per table, the C side's slots: the entry in each (None: free), id(entry) -> its
        # slot, the free slots (reused first); _push_table keeps them in step with the
        # table's change log, so a write costs C only the entries it touched
        self._entries: list[list[Any]] = [[] for _ in self._tables]
        self._slot_of: list[dict[int, int]] = [{} for _ in self._tables]
        self._free: list[list[int]] = [[] for _ in self._tables]
        # per table: the mask words of a table whose match keys are all exact (else None)
        self._exact_masks: list[Optional[list[int]]] = []
        for t in self._tables:
            ok = all(kf.match_kind == "exact" for kf in t._mkeys)
            self._exact_masks.append([w for kf in t._mkeys for w in _lohi((1 << kf.width) - 1)] if ok else None)
        # id(ActionCall) -> (the call, its words after ``op slot``): a batch's entries share
        # a few call objects (the P4Runtime plans cache them), so each is encoded once
        self._call_words: dict[int, tuple[ActionCall, tuple[int, ...]]] = {}
        self._tver = [-1] * len(self._tables)
        self._pver = [-1] * len(self._profiles)
        self._vsm: list[Any] = [None] * len(u.value_sets)
        for i, t in enumerate(self._tables):
            self._config_table(i, t)
        for i, p in enumerate(self._profiles):
            if getattr(p, "has_selector", False):
                lib.p4n_prof_hash(self._sw, i, *_hash_params(p.hash_fn))
        self._digest_conv: dict[int, Any] = {}
        self._stat_buf = (ctypes.c_int64 * 3)()
        self._hit_buf = (ctypes.c_int64 * (3 * 4096))()
        self._err_buf = (ctypes.c_int32 * (2 * 1024))()
        self._info = (ctypes.c_int64 * 5)()
        self._out = lib.p4n_out(self._sw).contents
        self._sync()

    # ------------------------------------------------------------------ state
    def _share_cells(self) -> None:
        """Registers and counters keep their cells in C arrays (shared with other native
        switches of the same program)."""
        lib, u = self._lib, self._unit
        for i, r in enumerate(u.registers):
            cells = r._cells
            if not (isinstance(cells, ctypes.Array) and len(cells) == r.size):
                arr = (ctypes.c_uint64 * max(1, r.size))()
                for j, v in enumerate(cells):
                    arr[j] = v
                r._cells = arr if r.size else cells
                cells = r._cells
            lib.p4n_set_register(self._sw, i, r.size, r.width, ctypes.cast(cells, _u64p) if r.size else None)
        for i, c in enumerate(u.counters):
            for attr in ("_packets", "_bytes"):
                cells = getattr(c, attr)
                if not (isinstance(cells, ctypes.Array) and len(cells) == c.size) and c.size:
                    arr = (ctypes.c_uint64 * c.size)()
                    for j, v in enumerate(cells):
                        arr[j] = v
                    setattr(c, attr, arr)
            lib.p4n_set_counter(self._sw, i, c.size, ctypes.cast(c._packets, _u64p) if c.size else None,
                                ctypes.cast(c._bytes, _u64p) if c.size else None)

    def _config_table(self, i: int, t: Any) -> None:
        match_idx = list(t._match_idx)
        sel = list(t._sel_spec)
        prof = next((k for k, p in enumerate(self._profiles) if p is t.implementation), -1)
        self._lib.p4n_table_config(self._sw, i, MODES[t.mode], len(t.keys), len(match_idx), _ints(match_idx),
                                   len(sel), _ints([s for s, _ in sel]), _ints([w for _, w in sel]),
                                   max(0, t._lpm_pos), t._lpm_width, prof,
                                   int(t.direct_counter is not None or t.direct_meter is not None))

    def _action(self, call: Optional[ActionCall]) -> tuple[int, Sequence[int]]:
        if call is None:
            return 0, ()
        return self._sid[call.name], call.args

    def _push_table(self, i: int, t: Any) -> None:
        """Bring C's copy of table ``t`` up to date: from its change log (``Table.changes_since``),
        only the entries removed, added or given a new action since the last call, in one
        ``p4n_table_del`` and one ``p4n_table_put``; the whole table when the log does not
        reach back that far (the first time)."""
        lib, sw = self._lib, self._sw
        slots, slot_of, free = self._entries[i], self._slot_of[i], self._free[i]
        changes = t.changes_since(self._tver[i])
        if changes and self._exact_masks[i] is not None:
            for kind, _e in changes:
                if kind != "add":
                    break
            else:
                self._push_exact_adds(i, t, changes)
                return
        gone: list[int] = []
        moved: list[int] = []
        if changes is None:
            lib.p4n_table_clear(sw, i)
            slots.clear()
            slot_of.clear()
            free.clear()
            new = list(t._entries.values())
            default = True
        else:
            touched: dict[int, Any] = {}
            default = False
            for _kind, e in changes:
                if e is None:
                    default = True
                else:
                    touched[id(e)] = e
            live = t._entries
            new = []
            for key, e in touched.items():
                slot = slot_of.get(key)
                if slot is None:
                    if live.get(e.handle) is e:
                        new.append(e)
                elif live.get(e.handle) is e:
                    moved.append(slot)      # still there (maybe removed and put back): its action again
                else:
                    gone.append(slot)
        if gone:
            for slot in gone:
                del slot_of[id(slots[slot])]
                slots[slot] = None
            free.extend(gone)
            lib.p4n_table_del(sw, i, len(gone), (ctypes.c_int64 * len(gone))(*gone))
        if new or moved:
            words: list[int] = []
            for slot in moved:
                self._action_words(slots[slot].action, 1, slot, words)
            masks = self._exact_masks[i]
            for e in new:
                slot = _take_slot(slots, slot_of, free, e)
                if masks is None or type(e.action) is not ActionCall:
                    self._entry_words(i, t, e, slot, words)
                    continue
                self._exact_call_words(e, slot, masks, words)
            buf = array("Q", words)
            lib.p4n_table_put(sw, i, len(new) + len(moved), (ctypes.c_uint64 * len(buf)).from_buffer(buf))
        if default:
            act, args = self._action(t.default_action)
            lib.p4n_table_default(sw, i, act, len(args), _u128s(args))
        lib.p4n_table_commit(sw, i)

    def _push_exact_adds(self, i: int, t: Any, changes: Sequence[tuple[str, Any]]) -> None:
        """:meth:`_push_table` of a table whose keys are all exact when every change since
        the last call is an ``add``: each of those entries is live and not in C yet (a
        removal since would be in the log; the last call left C holding exactly the live
        entries), so each goes into a free slot, in one ``p4n_table_put``, without the
        general path's bookkeeping of removed and modified entries."""
        slots, slot_of, free = self._entries[i], self._slot_of[i], self._free[i]
        masks = tuple(self._exact_masks[i] or ())
        single = len(masks) == 2
        words: list[int] = []
        # id(call) -> the slot of this copy's first entry with it: the entries after it with
        # the same call are sent as ``2 slot src prio handle values`` (C copies the action and
        # the masks from slot src); the calls are alive (their entries hold them), so ids are
        # told apart within the copy
        first: dict[int, int] = {}
        for _kind, e in changes:
            slot = _take_slot(slots, slot_of, free, e)
            a = e.action
            if type(a) is not ActionCall:
                self._entry_words(i, t, e, slot, words)
                continue
            src = first.get(id(a))
            if src is not None:
                if single:
                    v = e._value        # one key: the packed value is its value (< 2^width)
                    words += (2, slot, src, e.priority & M64, e.handle, v & M64, v >> 64)
                else:
                    words += (2, slot, src, e.priority & M64, e.handle)
                    for m in e.matches:
                        v = m.value & MASK128
                        words += (v & M64, v >> 64)
                continue
            first[id(a)] = slot
            self._exact_call_words(e, slot, masks, words)
        buf = array("Q", words)
        self._lib.p4n_table_put(self._sw, i, len(changes), (ctypes.c_uint64 * len(buf)).from_buffer(buf))
        self._lib.p4n_table_commit(self._sw, i)

    def _exact_call_words(self, e: Any, slot: int, masks: Sequence[int], words: list[int]) -> None:
        """Append ``e``'s op 0 record to ``words``: :meth:`_entry_words` of an entry of an
        all-exact table whose action is a direct :class:`ActionCall`, written out (the
        call's words from :meth:`_cache_call_words`, then priority, handle, ``masks`` and
        each key's value as two 64-bit words)."""
        a = e.action
        got = self._call_words.get(id(a))
        if got is None or got[0] is not a:
            got = self._cache_call_words(a)
        words += (0, slot)
        words += got[1]
        words += (e.priority & M64, e.handle, 0)
        words += masks
        for m in e.matches:
            v = m.value & MASK128
            words += (v & M64, v >> 64)

    def _cache_call_words(self, a: ActionCall) -> tuple[ActionCall, tuple[int, ...]]:
        """``_action_words(a, op, slot, ...)`` less its first two words, remembered by the
        call's id (with the call, so a reused id is told apart)."""
        out: list[int] = []
        self._action_words(a, 0, 0, out)
        if len(self._call_words) >= 4096:
            self._call_words.clear()
        got = (a, tuple(out[2:]))
        self._call_words[id(a)] = got
        return got

    def _action_words(self, a: Any, op: int, slot: int, out: list[int]) -> None:
        """``op slot kind act nargs ref args...`` of ``p4n_table_put`` for entry action ``a``."""
        if isinstance(a, ActionCall):
            args = a.args
            out += (op, slot, 0, self._sid[a.name], len(args), 0)
            for v in args:
                v &= MASK128
                out += (v & M64, v >> 64)
        elif isinstance(a, MemberRef):
            out += (op, slot, 1, 0, 0, a.member_id & M64)
        else:
            assert isinstance(a, GroupRef)
            out += (op, slot, 2, 0, 0, a.group_id & M64)

    def _entry_words(self, i: int, t: Any, e: Any, slot: int, out: list[int]) -> None:
        """The record of ``p4n_table_put`` for entry ``e`` of table ``t`` new in ``slot``:
        its action, priority, handle, a mask and a value per match key, its ranges."""
        self._action_words(e.action, 0, slot, out)
        out += (e.priority & M64, e.handle, 0)
        nranges_at = len(out) - 1
        masks = self._exact_masks[i]
        if masks is not None:
            out += masks
            for m in e.matches:
                v = m.value & MASK128
                out += (v & M64, v >> 64)
            return
        vals: list[int] = []
        ranges: list[int] = []
        for pos, (kf, m) in enumerate(zip(t._mkeys, e.matches)):
            full = (1 << kf.width) - 1
            if isinstance(m, Exact):
                mask, val = full, m.value
            elif isinstance(m, Lpm):
                mask, val = full ^ ((1 << (kf.width - m.prefix_len)) - 1), m.value
            elif isinstance(m, Ternary):
                mask, val = m.mask, m.value
            elif isinstance(m, Range):
                mask, val = 0, 0
                if not (m.low == 0 and m.high == full):
                    ranges += (pos, *_lohi(m.low), *_lohi(m.high))
                    out[nranges_at] += 1
            else:
                assert isinstance(m, Optional_)
                mask, val = (0, 0) if m.value is None else (full, m.value)
            out += _lohi(mask)
            vals += _lohi(val)
        out += vals
        out += ranges

    def table_mismatches(self, i: int) -> list[str]:
        """How C's copy of table ``self._tables[i]`` differs from the Python table now
        (``p4n_table_dump``): an entry missing, left over or held differently (action,
        arguments, priority, key), in a slot that the hit write-back does not map to it,
        not found by C's exact index, or another default action; ``[]`` when they agree.
        Call it after :meth:`_sync` (a switch's lock release or packet call does that).

        >>> sw._sync(); sw.table_mismatches(0)              # doctest: +SKIP
        []
        """
        t = self._tables[i]
        cap = 4096
        while True:
            buf = (ctypes.c_uint64 * cap)()
            n = self._lib.p4n_table_dump(self._sw, i, buf, cap)
            if n >= 0:
                break
            cap = -n
        w = list(buf[:n])
        nm = len(t._mkeys)
        out: list[str] = []
        dact, dn = w[0], w[1]
        got_default = (int(dact), tuple(_from_lohi(w[2 + 2 * k], w[3 + 2 * k]) & MASK128 for k in range(dn)))
        act, args = self._action(t.default_action)
        if got_default != (act, tuple(a & MASK128 for a in args)):
            out.append(f"default action: C has {got_default}, Python {(act, tuple(args))}")
        at = 2 + 2 * dn
        nlive = w[at]
        at += 1
        held: dict[int, tuple[int, list[int]]] = {}
        slots = self._entries[i]
        for _ in range(nlive):
            start = at
            slot, nargs = w[at], w[at + 3]
            at += 5 + 2 * nargs
            handle, nranges = w[at + 1], w[at + 2]
            at += 3 + 4 * nm + 5 * nranges
            record = w[start + 1:at]        # kind act nargs ref args prio handle nranges masks vals ranges
            indexed = w[at]
            at += 1
            if handle in held:
                out.append(f"handle {handle}: in C twice (slots {held[handle][0]} and {slot})")
            held[handle] = (slot, record)
            if not indexed:
                out.append(f"handle {handle}: C's exact index does not find slot {slot}")
            e = slots[slot] if slot < len(slots) else None
            if e is None or t._entries.get(handle) is not e:
                out.append(f"handle {handle}: in C slot {slot}, which the Python side maps to "
                           f"{'nothing' if e is None else f'an entry of handle {e.handle}'}")
        live = t._entries
        for handle, e in live.items():
            if handle not in held:
                out.append(f"handle {handle}: in Python ({e.matches}, {e.action}), not in C")
                continue
            words: list[int] = []
            self._entry_words(i, t, e, 0, words)
            if words[2:] != held[handle][1]:
                out.append(f"handle {handle}: C holds {held[handle][1]}, Python's entry encodes as {words[2:]}")
        for handle in held:
            if handle not in live:
                out.append(f"handle {handle}: in C, not in Python")
        return out

    def _push_profile(self, i: int, p: Any) -> None:
        lib = self._lib
        members = list(p.members.values())
        index = {m.member_id: k for k, m in enumerate(members)}
        groups = list(p.groups.values())
        lib.p4n_prof_reset(self._sw, i, len(members), len(groups))
        for k, m in enumerate(members):
            act, args = self._action(m.action)
            lib.p4n_prof_member(self._sw, i, k, m.member_id, act, len(args), _u128s(args))
        for k, g in enumerate(groups):
            ms = [index[m.member_id] for m in g.by_handle]
            lib.p4n_prof_group(self._sw, i, k, g.group_id, len(ms), _ints(ms))
        lib.p4n_prof_commit(self._sw, i)

    def _sync(self) -> None:
        """Copy into C what changed on the Python side since the last call."""
        tables = self._tables
        if [t.version for t in tables] != self._tver:
            for i, t in enumerate(tables):
                if t.version != self._tver[i]:
                    self._push_table(i, t)
                    self._tver[i] = t.version
        for i, p in enumerate(self._profiles):
            if p.version != self._pver[i]:
                self._push_profile(i, p)
                self._pver[i] = p.version
        for i, vs in enumerate(self._unit.value_sets):
            if vs.members is not self._vsm[i]:
                self._lib.p4n_vs_set(self._sw, i, len(vs.members), _u128s([v for v, _ in vs.members]),
                                     _u128s([m for _, m in vs.members]))
                self._vsm[i] = vs.members
        for k, (i, fn) in enumerate(self._custom):
            cfg = fn.config()
            if cfg != self._custom_cfg[k]:
                self._lib.p4n_set_hash(self._sw, i, *_hash_params(fn))
                self._custom_cfg[k] = cfg

    def _after(self) -> None:
        """What the call left for the Python side: hit times, statistics, errors."""
        lib, sw = self._lib, self._sw
        n = lib.p4n_take_hits(sw, self._hit_buf, 4096)
        while n:
            hb = self._hit_buf
            for k in range(n):
                self._entries[hb[3 * k]][hb[3 * k + 1]].last_hit_ns = hb[3 * k + 2]
            n = lib.p4n_take_hits(sw, self._hit_buf, 4096) if n == 4096 else 0
        lib.p4n_stats(sw, self._stat_buf)
        s = self.stats
        s.received, s.transmitted, s.dropped = self._stat_buf[0], self._stat_buf[1], self._stat_buf[2]
        ne = lib.p4n_take_errors(sw, self._err_buf, 1024)
        for k in range(ne):
            s.errors.append(self._error_text(self._err_buf[2 * k], self._err_buf[2 * k + 1]))

    def _error_text(self, kind: int, arg: int) -> str:
        if kind == 1:
            return f"AssertionFailed: {self._strings[arg - 1] if 0 < arg <= len(self._strings) else arg}"
        if kind == 2:
            return f"ParserErrorSignal: {arg}"
        exc, self._cb_exc = self._cb_exc, None
        if exc is not None:
            return f"{type(exc).__name__}: {exc}"
        return "NativeError: an internal limit of the native path"

    def _frames(self, n: int, with_src: bool = False) -> list[Any]:
        o = self._out
        if not n:
            return []
        raw = ctypes.string_at(o.buf, o.used)
        port, off, ln = o.port, o.off, o.len
        if with_src:
            src = o.src
            return [(src[i], port[i], raw[off[i]:off[i] + ln[i]]) for i in range(n)]
        return [(port[i], raw[off[i]:off[i] + ln[i]]) for i in range(n)]

    # ------------------------------------------------------------------ callbacks
    def _cb_clock(self) -> int:
        try:
            return int(self.clock())
        except BaseException as exc:  # noqa: BLE001 - reported as the packet's error
            self._cb_exc = exc
            return 0

    def _cb_meter(self, meter: int, index: int, nbytes: int, now_us: int) -> int:
        try:
            return int(self._unit.meters[meter].execute(index, nbytes, now_us))
        except BaseException as exc:  # noqa: BLE001
            self._cb_exc = exc
            return -2

    def _cb_hit(self, table: int, slot: int, nbytes: int, now_us: int) -> int:
        try:
            t = self._tables[table]
            entry = self._entries[table][slot]
            if entry.counter is not None:
                entry.counter.count(nbytes)
            colour = -1
            if entry.meter is not None:
                units = 1 if t.direct_meter is None or t.direct_meter.unit == "packets" else nbytes
                colour = int(entry.meter.execute(units, now_us))
            entry.last_hit_ns = now_us * 1000
            t.last_meter_color = None if colour < 0 else colour
            return colour
        except BaseException as exc:  # noqa: BLE001
            self._cb_exc = exc
            return -2

    def _cb_digest(self, name_id: int, n: int, vals: Any, now_us: int) -> int:
        try:
            name = self._strings[name_id - 1]
            values = tuple(_from_lohi(vals[2 * i], vals[2 * i + 1]) for i in range(n))
            conv = self._digest_conv.get(name_id)
            if conv is None:
                conv = self._digest_converter(name)
                self._digest_conv[name_id] = conv
            if conv:
                values = tuple(f(v) for f, v in zip(conv, values))
            self._digests.push(name, values, now_ns=now_us * 1000)
            if self.on_digest is not None:
                self.on_digest()
            return 0
        except BaseException as exc:  # noqa: BLE001
            self._cb_exc = exc
            return -1

    def _digest_converter(self, name: str) -> list[Callable[[int], Any]]:
        t = getattr(self.program, "digest_types", {}).get(name)
        if t is None:
            return []
        out: list[Callable[[int], Any]] = []
        for _n, ft in t.fields:
            st = strip_new(ft)
            if isinstance(st, BoolT):
                out.append(bool)
            elif isinstance(st, EnumT) and st.underlying is None:
                out.append(lambda v: self._strings[v - 1])
            else:
                out.append(int)
        return out

    def _cb_pre(self, kind: int, ident: int, out: Any, cap: int) -> int:
        try:
            if kind == 0:
                copies = replicate(self._pre, ident)
                for k, (port, rid) in enumerate(copies[:cap]):
                    out[2 * k], out[2 * k + 1] = port, rid
                return min(len(copies), cap)
            got = clone_copies(self._pre, ident)
            if got is None:
                return -1
            out[0] = clone_truncation(self._pre, ident) or 0
            for k, (port, rid) in enumerate(got[:cap]):
                out[1 + 2 * k], out[2 + 2 * k] = port, (-1 if rid is None else rid)
            return min(len(got), cap)
        except BaseException as exc:  # noqa: BLE001
            self._cb_exc = exc
            return -2

    # ------------------------------------------------------------------ packets
    def process_packet(self, ingress_port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one frame and everything it spawns (as V1ModelSwitch.process_packet)."""
        data = bytes(data)
        with self._lock:
            self._sync()
            n = self._lib.p4n_process(self._sw, ingress_port, data, len(data))
            frames = self._frames(n)
            self._after()
            return frames

    def process_batch(self, frames: Sequence[tuple[int, bytes]]) -> list[tuple[int, int, bytes]]:
        """``process_packet`` for each ``(port, frame)`` in turn, in one call into C;
        returns ``(index of the input frame, port, frame)`` for every frame sent."""
        n = len(frames)
        if not n:
            return []
        ports = (ctypes.c_int64 * n)(*(p for p, _ in frames))
        datas = (ctypes.c_char_p * n)(*(bytes(f) for _, f in frames))
        lens = (ctypes.c_int64 * n)(*(len(f) for _, f in frames))
        with self._lock:
            self._sync()
            k = self._lib.p4n_process_batch(self._sw, n, ports, datas, lens)
            out = self._frames(k, with_src=True)
            self._after()
            return out

    def run_ingress(self, ingress_port: int, data: bytes) -> list[NativeWork]:
        """First half (as V1ModelSwitch.run_ingress)."""
        data = bytes(data)
        with self._lock:
            self._sync()
            n = self._lib.p4n_run_ingress(self._sw, ingress_port, data, len(data))
            work = self._work(n)
            self._after()
            return work

    def _work(self, n: int) -> list[NativeWork]:
        out = []
        for i in range(n):
            h = self._lib.p4n_work(self._sw, i)
            self._lib.p4n_item_info(h, self._info)
            out.append(NativeWork(self, h, list(self._info)))
        return out

    def run_egress(self, item: NativeWork, qmeta: Optional[QueueMeta] = None) -> EgressResult:
        """Second half for one dequeued packet (as V1ModelSwitch.run_egress)."""
        with self._lock:
            h = item.take()
            if not h:
                raise ValueError("this egress work was already run")
            self._sync()
            if qmeta is None:
                n = self._lib.p4n_run_egress(self._sw, h, 0, 0, 0, 0)
            else:
                n = self._lib.p4n_run_egress(self._sw, h, 1, qmeta.enq_timestamp, qmeta.enq_qdepth, qmeta.deq_qdepth)
            frames = self._frames(n)
            work = self._work(self._lib.p4n_nwork(self._sw))
            self._after()
            return EgressResult(frames, work)
