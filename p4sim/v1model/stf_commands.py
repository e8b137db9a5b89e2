"""STF control-plane commands carried out on a compiled program's runtime state, with the
meaning simple_switch_CLI gives them (the BMv2 STF harness forwards them to that CLI).

* ``add TABLE [PRIO] KEY:VALUE ... ACTION(ARG:VALUE, ...)``: table and action names are
  resolved exactly, then by unique suffix; key names as p4c writes them (expression text
  or ``@name``; ``$valid$`` keys; ``h$0`` for ``h[0]``). A key left out matches anything
  (ternary ``0&&&0``, lpm ``0/0``, range full) except exact keys, which default to 0.
  Ternary values without ``&&&`` get a mask of ``F`` per written hex digit (``*``
  digits masked out), lpm values without ``/`` a prefix of 4 bits per written hex digit
  — both exactly as bmv2stf builds them.
* Priorities: the harness sends ``10000 - PRIO`` and simple_switch_CLI lets the
  *smallest* number win, so a *larger* STF priority wins. The runtime's "higher number
  wins" priority is therefore ``PRIO + 1``; an entry without a priority in a table that
  needs one gets the lowest (1); equal priorities are resolved by the runtime.
* ``setdefault``, ``mc_mgrp_create``/``mc_node_create``/``mc_node_associate``/...,
  ``mirroring_add``/``mirroring_add_mc``/``mirroring_delete``, counter/register/meter
  reads and writes, ``check_counter`` (failures collected in ``check_failures``).

Example::

    >>> target = StfTarget(program)                                # doctest: +SKIP
    >>> target.execute(parse_stf("add ipv4_lpm hdr.ipv4.dstAddr:0x0a000000/8 fwd(port:1)")[0])  # doctest: +SKIP
"""
from __future__ import annotations

import operator
import re
from typing import Any, Callable, Optional

from p4sim.stf import StfCommand, StfError, parse_int

_OPS: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
}

PRIORITY_KINDS = ("ternary", "range", "optional")


def resolve_name(names: list[str], wanted: str, what: str) -> str:
    """``wanted`` itself, else the unique name ending in ``.wanted``, else the unique
    name ending in ``wanted`` (bmv2stf's rule). Raises :class:`StfError` otherwise.

    Example::

        >>> resolve_name(["MyIngress.t", "MyEgress.t2"], "t", "table")
        'MyIngress.t'
    """
    if wanted in names:
        return wanted
    for pred in (lambda n: n.endswith("." + wanted), lambda n: n.endswith(wanted)):
        found = [n for n in names if pred(n)]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise StfError(f"{what} name {wanted!r} is ambiguous: {', '.join(sorted(found))}")
    known = ", ".join(sorted(names)) or "none"
    raise StfError(f"no {what} {wanted!r} (known: {known})")


def _canon_key(name: str) -> str:
    """p4c names an ``isValid()`` key ``X.$valid$``; accept either spelling."""
    return name.replace(".isValid()", ".$valid$")


def resolve_key(key_names: list[str], wanted: str) -> str:
    """Find the table key a STF ``NAME:VALUE`` refers to (bmv2stf's rules).

    Example::

        >>> resolve_key(["hdr.h.$valid$", "hdr.h.f"], "hdr.h")
        'hdr.h.$valid$'
        >>> resolve_key(["hdr.s[0].f"], "hdr.s$0.f")
        'hdr.s[0].f'
        >>> resolve_key(["hdr.h.isValid()"], "hdr.h.$valid$")
        'hdr.h.isValid()'
    """
    by_canon = {_canon_key(n): n for n in key_names}
    names = list(by_canon)
    key = _canon_key(re.sub(r"\$([0-9]+)", r"[\1]", wanted))
    if key in by_canon:
        return by_canon[key]
    for alt in (key + "$", key + ".$valid$"):
        if alt in by_canon:
            return by_canon[alt]
    if key.endswith(".valid") and key[:-5] + "$valid$" in by_canon:
        return by_canon[key[:-5] + "$valid$"]
    found = {n for n in names if n.endswith("." + key) or n.endswith("." + key + "$")}
    if key == "valid":
        found |= {n for n in names if n.endswith("$valid$")}
    if len(found) == 1:
        return by_canon[found.pop()]
    if len(found) > 1:
        raise StfError(f"key field {wanted!r} is ambiguous: "
                       f"{', '.join(sorted(by_canon[n] for n in found))}")
    raise StfError(f"unexpected key field {wanted!r} (keys: {', '.join(key_names) or 'none'})")


def _digits_info(text: str) -> tuple[str, int]:
    """(digits without prefix, bits per digit) of a 0x/0b/0o literal."""
    low = text.lower()
    for prefix, bits in (("0x", 4), ("0b", 1), ("0o", 3)):
        if low.startswith(prefix):
            return text[2:], bits
    raise StfError(f"decimal value {text!r} not supported for a ternary key "
                   "(write it in hex or binary)")


def ternary_value(text: str, width: int) -> tuple[int, int]:
    """``(value, mask)`` of a STF ternary key value.

    Example::

        >>> ternary_value("0x0A&&&0xFF", 16), ternary_value("0x1*", 16), ternary_value("*", 8)
        ((10, 255), (16, 240), (0, 0))
    """
    if text == "*" or text == "_":
        return 0, 0
    if "&&&" in text:
        v, m = text.split("&&&", 1)
        return parse_int(v), parse_int(m)
    digits, bits = _digits_info(text)
    value = mask = 0
    digit_mask = (1 << bits) - 1
    for ch in digits:
        value <<= bits
        mask <<= bits
        if ch != "*":
            value |= int(ch, 16)
            mask |= digit_mask
    return value, mask


def lpm_value(text: str, width: int) -> tuple[int, int]:
    """``(value, prefix_len)`` of a STF lpm key value.

    Example::

        >>> lpm_value("0x0a000000/8", 32), lpm_value("0x0a**", 16), lpm_value("10", 8)
        ((167772160, 8), (2560, 8), (10, 8))
    """
    if "/" in text:
        v, p = text.split("/", 1)
        return parse_int(v), int(p, 0)
    if text in ("*", "_"):
        return 0, 0
    low = text.lower()
    if low.startswith(("0x", "0b", "0o")):
        digits, bits = _digits_info(text)
        plen = (len(digits) - digits.count("*")) * bits
        return int(digits.replace("*", "0"), 16 if bits == 4 else 2 if bits == 1 else 8), plen
    return parse_int(text), width


def range_value(text: str, width: int) -> tuple[int, int]:
    """``(lo, hi)`` of a STF range key value: ``lo->hi``, ``lo..hi``, ``*`` or one value.

    Example::

        >>> range_value("1->5", 8), range_value("*", 8), range_value("7", 8)
        ((1, 5), (0, 255), (7, 7))
    """
    if text in ("*", "_"):
        return 0, (1 << width) - 1
    for sep in ("->", ".."):
        if sep in text:
            lo, hi = text.split(sep, 1)
            return parse_int(lo), parse_int(hi)
    v = parse_int(text)
    return v, v


class StfTarget:
    """Carries out the non-packet STF commands on ``program.state``."""

    def __init__(self, program: Any, notes_file: str = "<stf>") -> None:
        self.program = program
        self.state = program.state
        self.check_failures: list[str] = []
        self.handles: dict[str, tuple[str, Any]] = {}   # "= ID" names -> (table, entry)
        self.mc_nodes: dict[int, tuple[int, list[int]]] = {}   # handle -> (rid, ports)
        self._next_node = 0

    # ------------------------------------------------------------------ dispatch
    def execute(self, cmd: StfCommand) -> Optional[str]:
        """Run one command; returns a note to show (reads) or None."""
        fn = getattr(self, "_cmd_" + cmd.name, None)
        if fn is None:
            raise StfError(f"unsupported STF command {cmd.name!r}")
        try:
            return fn(cmd.args)
        except StfError:
            raise
        except Exception as exc:  # runtime rejected it: report like the CLI would
            code = getattr(exc, "code", None)
            raise StfError(f"{cmd.name} failed: {exc}" if code else
                           f"{cmd.name} failed: {type(exc).__name__}: {exc}") from exc

    def _cmd_wait(self, args: dict[str, Any]) -> Optional[str]:
        return None

    def _cmd_remove(self, args: dict[str, Any]) -> Optional[str]:
        return "'remove all' ignored (the BMv2 STF harness ignores it too)"

    # ------------------------------------------------------------------ tables
    def _table(self, name: str) -> Any:
        tables = self.state.tables
        return tables[resolve_name(list(tables), name, "table")]

    @staticmethod
    def _action_spec(table: Any, name: str) -> Any:
        acts = table.actions
        specs = dict(acts) if isinstance(acts, dict) else {a.name: a for a in acts}
        return specs[resolve_name(list(specs), name, f"action of table {table.name}")]

    def _action_call(self, table: Any, name: str, args: list[tuple[str, str]]) -> Any:
        from p4sim.runtime.tables import ActionCall

        spec = self._action_spec(table, name)
        given = dict(args)
        names = [p for p, _ in spec.params]
        unknown = [k for k in given if k not in names]
        if unknown:
            raise StfError(f"unexpected action argument {unknown[0]!r} for {spec.name} "
                           f"(parameters: {', '.join(names) or 'none'})")
        missing = [p for p in names if p not in given]
        if missing:
            raise StfError(f"missing action argument(s) {', '.join(missing)} for {spec.name}")
        values = []
        for pname, width in spec.params:
            try:
                v = parse_int(given[pname])
            except ValueError:
                raise StfError(f"bad value {given[pname]!r} for action argument {pname}") from None
            values.append(v)
        return ActionCall(spec.name, values)

    def _matches(self, table: Any, keys: list[tuple[str, str]]) -> list[Any]:
        from p4sim.runtime import tables as T

        mkeys = [k for k in table.keys if k.match_kind != "selector"]
        key_names = [k.name for k in mkeys]
        given: dict[str, str] = {}
        for kname, value in keys:
            given[resolve_key(key_names, kname)] = value
        out = []
        for k in mkeys:
            kind, width, text = k.match_kind, k.width, given.get(k.name)
            try:
                if kind == "exact":
                    out.append(T.Exact(parse_int(text) if text is not None else 0))
                elif kind == "ternary":
                    v, m = ternary_value(text, width) if text is not None else (0, 0)
                    out.append(T.Ternary(v & m, m))
                elif kind == "lpm":
                    v, p = lpm_value(text, width) if text is not None else (0, 0)
                    if 0 <= p <= width:
                        v &= ((1 << p) - 1) << (width - p)
                    out.append(T.Lpm(v, p))
                elif kind == "range":
                    lo, hi = range_value(text, width) if text is not None else (0, (1 << width) - 1)
                    out.append(T.Range(lo, hi))
                elif kind == "optional":
                    out.append(T.Optional_(None if text in (None, "*", "_") else parse_int(text)))
                else:
                    raise StfError(f"match kind {kind!r} of key {k.name} is not supported in STF")
            except ValueError:
                raise StfError(f"bad value {text!r} for key {k.name} ({kind})") from None
        return out

    def _cmd_add(self, args: dict[str, Any]) -> Optional[str]:
        table = self._table(args["table"])
        if getattr(table, "implementation", None) is not None:
            raise StfError(f"table {table.name} has an action profile/selector: "
                           "STF 'add' cannot program it")
        matches = self._matches(table, args["keys"])
        action = self._action_call(table, args["action"], args["action_args"])
        needs_priority = any(k.match_kind in PRIORITY_KINDS for k in table.keys)
        prio = args["priority"]
        priority = (prio + 1 if prio is not None else 1) if needs_priority else 0
        entry = table.add_entry(matches, action, priority=priority)
        if args.get("handle"):
            self.handles[args["handle"]] = (table.name, entry)
        return None

    def _cmd_setdefault(self, args: dict[str, Any]) -> Optional[str]:
        table = self._table(args["table"])
        action = self._action_call(table, args["action"], args["action_args"])
        table.set_default_action(action)
        return None

    # ------------------------------------------------------------------ PRE
    def _cmd_mc_mgrp_create(self, args: dict[str, Any]) -> Optional[str]:
        self.state.pre.mc_mgrp_create(args["ints"][0])
        return None

    def _cmd_mc_mgrp_destroy(self, args: dict[str, Any]) -> Optional[str]:
        self.state.pre.mc_mgrp_destroy(args["ints"][0])
        return None

    def _cmd_mc_node_create(self, args: dict[str, Any]) -> Optional[str]:
        handle = self.state.pre.mc_node_create(args["ints"][0], list(args["list"]))
        return f"node handle {handle}"

    def _cmd_mc_node_update(self, args: dict[str, Any]) -> Optional[str]:
        self.state.pre.mc_node_update(args["ints"][0], list(args["list"]))
        return None

    def _cmd_mc_node_destroy(self, args: dict[str, Any]) -> Optional[str]:
        self.state.pre.mc_node_destroy(args["ints"][0])
        return None

    def _cmd_mc_node_associate(self, args: dict[str, Any]) -> Optional[str]:
        self.state.pre.mc_node_associate(args["ints"][0], args["ints"][1])
        return None

    def _cmd_mc_node_dissociate(self, args: dict[str, Any]) -> Optional[str]:
        self.state.pre.mc_node_dissociate(args["ints"][0], args["ints"][1])
        return None

    def _cmd_mirroring_add(self, args: dict[str, Any]) -> Optional[str]:
        self.state.pre.mirroring_add(args["ints"][0], args["ints"][1])
        return None

    def _cmd_mirroring_add_mc(self, args: dict[str, Any]) -> Optional[str]:
        self.state.pre.mirroring_add_mc(args["ints"][0], args["ints"][1])
        return None

    def _cmd_mirroring_delete(self, args: dict[str, Any]) -> Optional[str]:
        self.state.pre.mirroring_delete(args["ints"][0])
        return None

    def _cmd_mirroring_get(self, args: dict[str, Any]) -> Optional[str]:
        from p4sim.v1model.sessions import clone_copies

        return f"mirroring session {args['ints'][0]}: {clone_copies(self.state.pre, args['ints'][0])}"

    # ------------------------------------------------------------------ externs
    def _extern(self, kind: str, name: str) -> Any:
        objs = getattr(self.state, kind)
        return objs[resolve_name(list(objs), name, kind.rstrip("s").replace("_", " "))]

    def _ints(self, words: list[str], n: int, usage: str) -> list[int]:
        if len(words) != n:
            raise StfError(f"usage: {usage}")
        try:
            return [parse_int(w) for w in words]
        except ValueError:
            raise StfError(f"usage: {usage}") from None

    def _cmd_counter_read(self, args: dict[str, Any]) -> Optional[str]:
        (index,) = self._ints(args["words"], 1, "counter_read NAME INDEX")
        c = self._extern("counters", args["extern"])
        packets, nbytes = c.read(index)
        return f"{c.name}[{index}] = (packets={packets}, bytes={nbytes})"

    def _cmd_counter_write(self, args: dict[str, Any]) -> Optional[str]:
        index, packets, nbytes = self._ints(args["words"], 3,
                                           "counter_write NAME INDEX PACKETS BYTES")
        self._extern("counters", args["extern"]).write(index, packets, nbytes)
        return None

    def _cmd_counter_reset(self, args: dict[str, Any]) -> Optional[str]:
        self._ints(args["words"], 0, "counter_reset NAME")
        self._extern("counters", args["extern"]).reset()
        return None

    def _cmd_register_read(self, args: dict[str, Any]) -> Optional[str]:
        (index,) = self._ints(args["words"], 1, "register_read NAME INDEX")
        r = self._extern("registers", args["extern"])
        return f"{r.name}[{index}] = {r.get(index)}"

    def _cmd_register_write(self, args: dict[str, Any]) -> Optional[str]:
        index, value = self._ints(args["words"], 2, "register_write NAME INDEX VALUE")
        self._extern("registers", args["extern"]).set(index, value)
        return None

    def _cmd_register_reset(self, args: dict[str, Any]) -> Optional[str]:
        self._ints(args["words"], 0, "register_reset NAME")
        self._extern("registers", args["extern"]).reset()
        return None

    @staticmethod
    def _rates(words: list[str], usage: str) -> tuple[int, int, int, int]:
        """simple_switch_CLI rates: ``CIR:CBURST PIR:PBURST``, rates in units/µs."""
        if len(words) != 2 or any(":" not in w for w in words):
            raise StfError(f"usage: {usage}")
        try:
            (cr, cb), (pr, pb) = [w.split(":", 1) for w in words]
            return (round(float(cr) * 1e6), parse_int(cb), round(float(pr) * 1e6), parse_int(pb))
        except ValueError:
            raise StfError(f"usage: {usage}") from None

    def _cmd_meter_array_set_rates(self, args: dict[str, Any]) -> Optional[str]:
        m = self._extern("meters", args["extern"])
        cir, cb, pir, pb = self._rates(args["words"], "meter_array_set_rates NAME CIR:CBURST PIR:PBURST")
        for i in range(m.size):
            m.set_config(i, cir, cb, pir, pb)
        return None

    def _cmd_meter_set_rates(self, args: dict[str, Any]) -> Optional[str]:
        words = args["words"]
        usage = "meter_set_rates NAME INDEX CIR:CBURST PIR:PBURST"
        if not words:
            raise StfError(f"usage: {usage}")
        index = self._ints(words[:1], 1, usage)[0]
        cir, cb, pir, pb = self._rates(words[1:], usage)
        self._extern("meters", args["extern"]).set_config(index, cir, cb, pir, pb)
        return None

    def _cmd_meter_get_rates(self, args: dict[str, Any]) -> Optional[str]:
        (index,) = self._ints(args["words"], 1, "meter_get_rates NAME INDEX")
        m = self._extern("meters", args["extern"])
        return f"{m.name}[{index}] = {m.get_config(index)}"

    def _cmd_check_counter(self, args: dict[str, Any]) -> Optional[str]:
        name, index_text = args["counter"], args["index"]
        if index_text.startswith("$"):
            handle = index_text[1:]
            if handle not in self.handles:
                raise StfError(f"check_counter: no entry was added with '= {handle}'")
            table_name, entry = self.handles[handle]
            cell = getattr(entry, "counter", None) or getattr(entry, "direct_counter", None)
            if cell is None:
                raise StfError(f"check_counter: entry {handle} of {table_name} has no direct counter")
            packets, nbytes = cell.read()
            where = f"{name}(${handle})"
        else:
            index = parse_int(index_text)
            c = self._extern("counters", name)
            packets, nbytes = c.read(index)
            where = f"{c.name}({index})"
        actual = packets if args["kind"] == "packets" else nbytes
        if not _OPS[args["op"]](actual, args["value"]):
            self.check_failures.append(
                f"check_counter {where}: {args['kind']} is {actual}, expected "
                f"{args['op']} {args['value']}")
        return None
