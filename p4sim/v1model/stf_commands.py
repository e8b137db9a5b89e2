"""STF control-plane commands carried out on a compiled program's runtime state, with the
meaning p4c's BMv2 runner (``bmv2stf.py``) and simple_switch_CLI give them; whatever
that pair refuses is refused here with a located ``file:line:col: error:``.

* ``add TABLE [PRIO] KEY:VALUE ... ACTION(ARG:VALUE, ...)``: table and action names
  are matched exactly, else by a unique suffix of the name (``t`` finds ``MyIngress.t``;
  two candidates are an error); key names as bmv2stf resolves them (``h$0`` for
  ``h[0]``, ``hdr.h`` or ``hdr.h.valid`` for ``hdr.h.$valid$``, a unique ``.suffix``).
  A key left out matches anything (ternary/optional ``0&&&0``, lpm ``0/0``); an exact
  key left out is 0. Values: exact keys and action arguments as simple_switch_CLI reads
  them (``int(text, 0)``: decimal without leading zeros, ``0x``, ``0b``, no ``*``);
  ternary and optional keys only in ``0x``/``0b`` with a mask of the written digits
  (``*`` digits masked out: ``0x0A`` on 16 bits is ``0x000A&&&0x00FF``); lpm keys only
  in ``0x``/``0b`` with a prefix of the written non-``*`` digits (``0x0a******`` is
  ``10.0.0.0/8``). Tables with a range key cannot be programmed (the runner fails on
  them). A table with a ternary or optional key needs PRIO; elsewhere PRIO is ignored.
* Priorities: the runner sends ``10000 - PRIO`` and BMv2 lets the *smallest* number
  win, so a *larger* STF priority wins. The runtime's "higher number wins" priority is
  therefore ``PRIO + 1``.
* ``setdefault``; the PRE and mirroring commands (decimal numbers, as the CLI reads
  them); counter/register/meter commands (extern names exactly or by a unique
  ``.suffix``, as simple_switch_CLI finds them); ``check_counter NAME(INDEX|$ENTRY)``
  (failures collected in ``check_failures``; BMv2's runner parses it but checks nothing).

Example::

    >>> target = StfTarget(program)                                # doctest: +SKIP
    >>> target.execute(parse_stf("add ipv4_lpm hdr.ipv4.dstAddr:0x0a****** fwd(port:1)")[0])  # doctest: +SKIP
"""
from __future__ import annotations

import operator
import re
from typing import Any, Callable, Optional

from p4sim.stf_grammar import StfCommand, StfError

_OPS: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
}

PRIORITY_KINDS = ("ternary", "optional")


def cli_int(text: str, what: str = "value") -> int:
    """A number as simple_switch_CLI reads a key or action value: ``int(text, 0)``.

    Example::

        >>> cli_int("0x1F"), cli_int("0b11"), cli_int("10"), cli_int("0")
        (31, 3, 10, 0)
        >>> try:
        ...     cli_int("010")
        ... except StfError as err:
        ...     print(err)
        <stf>: error: bad value '010' for value: simple_switch_CLI reads it with int(text, 0) (no leading zeros, no * digits)
    """
    try:
        return int(text, 0)
    except ValueError:
        raise StfError(f"bad value {text!r} for {what}: simple_switch_CLI reads it with "
                       "int(text, 0) (no leading zeros, no * digits)") from None


def resolve_name(names: list[str], wanted: str, what: str) -> str:
    """bmv2stf's rule for tables and actions: ``wanted`` itself, else the one name that
    ends with ``wanted``. Raises :class:`StfError` otherwise.

    Example::

        >>> resolve_name(["MyIngress.t", "MyEgress.t2"], "t", "table")
        'MyIngress.t'
    """
    if wanted in names:
        return wanted
    found = [n for n in names if n.endswith(wanted)]
    if len(found) == 1:
        return found[0]
    if found:
        raise StfError(f"{what} name {wanted!r} is ambiguous: {', '.join(sorted(found))}")
    known = ", ".join(sorted(names)) or "none"
    raise StfError(f"no {what} {wanted!r} (known: {known})")


def resolve_cli_name(names: list[str], wanted: str, what: str) -> str:
    """simple_switch_CLI's rule for externs: the full name, or a suffix of whole
    dot-separated parts that only one name has.

    Example::

        >>> resolve_cli_name(["MyIngress.c", "MyEgress.c2"], "c", "counter")
        'MyIngress.c'
    """
    found = [n for n in names if n == wanted or n.endswith("." + wanted)]
    if len(found) == 1:
        return found[0]
    if found:
        raise StfError(f"{what} name {wanted!r} is ambiguous: {', '.join(sorted(found))}")
    known = ", ".join(sorted(names)) or "none"
    raise StfError(f"no {what} {wanted!r} (known: {known})")


def _canon_key(name: str) -> str:
    """p4c names an ``isValid()`` key ``X.$valid$``; accept either spelling."""
    return name.replace(".isValid()", ".$valid$")


def resolve_key(key_names: list[str], wanted: str) -> str:
    """Find the table key a STF ``NAME:VALUE`` refers to, by bmv2stf's rules (in its
    order; of several ``.suffix`` matches the last one wins, as there).

    Example::

        >>> resolve_key(["hdr.h.$valid$", "hdr.h.f"], "hdr.h")
        'hdr.h.$valid$'
        >>> resolve_key(["hdr.s[0].f"], "hdr.s$0.f")
        'hdr.s[0].f'
        >>> resolve_key(["hdr.h.isValid()"], "hdr.h.$valid$")
        'hdr.h.isValid()'
    """
    by_canon = {_canon_key(n): n for n in key_names}
    key = re.sub(r"^(.*)\$([0-9]+)(.*)$", r"\1[\2]\3", wanted)
    if key in by_canon:
        return by_canon[key]
    for alt in (key + "$", key + ".$valid$"):
        if alt in by_canon:
            return by_canon[alt]
    if key.endswith(".valid") and key[:-5] + "$valid$" in by_canon:
        return by_canon[key[:-5] + "$valid$"]
    found = None
    for name in by_canon:
        if name.endswith("." + key) or name.endswith("." + key + "$"):
            key = found = name
        elif key == "valid" and name.endswith(".$valid$"):
            key = found = name
    if found is None and key == "valid" and "$valid$" in by_canon:
        found = "$valid$"
    if found is None:
        raise StfError(f"unexpected key field {wanted!r} (keys: {', '.join(key_names) or 'none'})")
    return by_canon[found]


def _digits(text: str, kind: str) -> tuple[str, int]:
    """(digits after the prefix, bits per digit) of a ``0x``/``0b`` value, as bmv2stf's
    makeMask/makeLpm read it (lower-case prefixes only)."""
    for prefix, bits in (("0x", 4), ("0b", 1)):
        if text.startswith(prefix):
            return text[2:], bits
    raise StfError(f"value {text!r} not supported for {kind} key: p4c's BMv2 runner takes "
                   f"only 0x... or 0b... (lower-case prefix) here")


def ternary_value(text: str, width: int) -> tuple[int, int]:
    """``(value, mask)`` of a STF ternary key value (bmv2stf's makeMask).

    Example::

        >>> ternary_value("0x0A", 16), ternary_value("0x1*", 16), ternary_value("0b1*0", 3)
        ((10, 255), (16, 240), (4, 5))
    """
    digits, bits = _digits(text, "a ternary")
    value = mask = 0
    for ch in digits:
        value = (value << bits) | (0 if ch == "*" else int(ch, 16))
        mask = (mask << bits) | (0 if ch == "*" else (1 << bits) - 1)
    for what, v in (("value", value), ("mask", mask)):
        if v >> width:
            raise StfError(f"ternary {what} of {text!r} does not fit in {width} bits")
    return value, mask


def lpm_value(text: str, width: int) -> tuple[int, int]:
    """``(value, prefix_len)`` of a STF lpm key value (bmv2stf's makeLpm): the prefix is
    the number of written non-``*`` digits times their bits.

    Example::

        >>> lpm_value("0x0a******", 32), lpm_value("0x0a**", 16), lpm_value("0b1*", 2)
        ((167772160, 8), (2560, 8), (2, 1))
    """
    digits, bits = _digits(text, "an lpm")
    prefix_len = (len(digits) - digits.count("*")) * bits
    value = int(digits.replace("*", "0"), 16 if bits == 4 else 2)
    if value >> width:
        raise StfError(f"lpm value {text!r} does not fit in {width} bits")
    if prefix_len > width:
        raise StfError(f"lpm value {text!r} gives a /{prefix_len} prefix, the key has {width} bits")
    return value, prefix_len


class StfTarget:
    """Carries out the non-packet STF commands on ``program.state``."""

    def __init__(self, program: Any, notes_file: str = "<stf>") -> None:
        self.program = program
        self.state = program.state
        self.check_failures: list[str] = []
        self.handles: dict[str, tuple[str, Any]] = {}   # "= ID" names -> (table, entry)
        self.mc_nodes: dict[int, tuple[int, list[int]]] = {}   # handle -> (rid, ports)
        self._next_node = 0
        self._cmd: Optional[StfCommand] = None

    # ------------------------------------------------------------------ dispatch
    def execute(self, cmd: StfCommand) -> Optional[str]:
        """Run one command; returns a note to show (reads) or None."""
        fn = getattr(self, "_cmd_" + cmd.name, None)
        if fn is None:
            raise StfError(f"unsupported STF command {cmd.name!r}")
        self._cmd = cmd
        try:
            return fn(cmd.args)
        except StfError:
            raise
        except Exception as exc:  # runtime rejected it: report like the CLI would
            code = getattr(exc, "code", None)
            raise StfError(f"{cmd.name} failed: {exc}" if code else
                           f"{cmd.name} failed: {type(exc).__name__}: {exc}") from exc

    def _located(self, err: StfError, part: str) -> StfError:
        """``err`` placed at ``part`` (``key0``, ``arg1``, ``index``) of the command."""
        where = self._cmd.pos.get(part) if self._cmd is not None else None
        if where and not err.line:
            err.line, err.col = where
        return err

    def _cmd_wait(self, args: dict[str, Any]) -> Optional[str]:
        return None

    def _cmd_remove(self, args: dict[str, Any]) -> Optional[str]:
        return "'remove all' ignored (p4c's BMv2 runner ignores it too)"

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
        names = [p for p, _ in spec.params]
        given: dict[str, int] = {}
        for i, (pname, text) in enumerate(args):
            if pname not in names:
                raise self._located(StfError(
                    f"unexpected action argument {pname!r} for {spec.name} "
                    f"(parameters: {', '.join(names) or 'none'})"), f"arg{i}")
            try:
                given[pname] = cli_int(text, f"action argument {pname}")
            except StfError as err:
                raise self._located(err, f"arg{i}")
        missing = [p for p in names if p not in given]
        if missing:
            raise StfError(f"missing action argument(s) {', '.join(missing)} for {spec.name}")
        return ActionCall(spec.name, [given[p] for p in names])

    def _matches(self, table: Any, keys: list[tuple[str, str]]) -> list[Any]:
        from p4sim.runtime import tables as T

        mkeys = [k for k in table.keys if k.match_kind != "selector"]
        by_name = {k.name: k for k in mkeys}
        ranged = [k.name for k in mkeys if k.match_kind == "range"]
        if ranged:
            raise StfError(f"table {table.name} has a range key ({', '.join(ranged)}): p4c's "
                           "BMv2 runner cannot program range keys")
        given: dict[str, Any] = {}
        for i, (kname, text) in enumerate(keys):
            try:
                k = by_name[resolve_key(list(by_name), kname)]
                width = k.width
                if k.match_kind == "exact":
                    given[k.name] = T.Exact(cli_int(text, f"key {k.name}"))
                elif k.match_kind in ("ternary", "optional"):
                    v, m = ternary_value(text, width)
                    given[k.name] = self._ternary_like(k, v, m)
                elif k.match_kind == "lpm":
                    v, p = lpm_value(text, width)
                    given[k.name] = T.Lpm(v & (((1 << p) - 1) << (width - p)), p)
                else:
                    raise StfError(f"match kind {k.match_kind!r} of key {k.name} is not "
                                   "supported in STF")
            except StfError as err:
                raise self._located(err, f"key{i}")
        out = []
        for k in mkeys:
            if k.name in given:
                out.append(given[k.name])
            elif k.match_kind == "exact":
                out.append(T.Exact(0))
            elif k.match_kind == "lpm":
                out.append(T.Lpm(0, 0))
            else:
                out.append(self._ternary_like(k, 0, 0))
        return out

    @staticmethod
    def _ternary_like(key: Any, value: int, mask: int) -> Any:
        """A ternary match, or an optional one (BMv2's JSON makes optional keys ternary:
        p4sim's optional match holds only a full mask or none)."""
        from p4sim.runtime import tables as T

        if key.match_kind == "ternary":
            return T.Ternary(value & mask, mask)
        if mask == 0:
            return T.Optional_(None)
        if mask == (1 << key.width) - 1:
            return T.Optional_(value)
        raise StfError(f"optional key {key.name}: a partial mask cannot be held by p4sim's "
                       "optional match (write every digit, or only * digits)")

    def _cmd_add(self, args: dict[str, Any]) -> Optional[str]:
        table = self._table(args["table"])
        if getattr(table, "implementation", None) is not None:
            raise StfError(f"table {table.name} has an action profile/selector: "
                           "STF 'add' cannot program it")
        if table.initial_entries and not table.is_const:
            raise StfError(f"table {table.name} has initial entries: BMv2 makes its entries "
                           "immutable, so 'add' fails there (IMMUTABLE_TABLE_ENTRIES)")
        matches = self._matches(table, args["keys"])
        action = self._action_call(table, args["action"], args["action_args"])
        needs_priority = any(k.match_kind in PRIORITY_KINDS for k in table.keys)
        prio = args["priority"]
        if needs_priority and prio is None:
            raise StfError(f"table {table.name} has ternary/optional keys: p4c's BMv2 runner "
                           "needs a priority (add TABLE PRIORITY KEY:VALUE ... ACTION(...))")
        priority = prio + 1 if needs_priority else 0
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

    def _cmd_mc_node_create(self, args: dict[str, Any]) -> Optional[str]:
        handle = self.state.pre.mc_node_create(args["ints"][0], list(args["list"]))
        return f"node handle {handle}"

    def _cmd_mc_node_associate(self, args: dict[str, Any]) -> Optional[str]:
        self.state.pre.mc_node_associate(args["ints"][0], args["ints"][1])
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
        return objs[resolve_cli_name(list(objs), name, kind.rstrip("s").replace("_", " "))]

    @staticmethod
    def _ints(words: list[str]) -> list[int]:
        """The CLI command's numbers (the grammar has made sure they are decimal)."""
        return [int(w) for w in words]

    def _cmd_counter_read(self, args: dict[str, Any]) -> Optional[str]:
        (index,) = self._ints(args["words"])
        c = self._extern("counters", args["extern"])
        packets, nbytes = c.read(index)
        return f"{c.name}[{index}] = (packets={packets}, bytes={nbytes})"

    def _cmd_counter_write(self, args: dict[str, Any]) -> Optional[str]:
        index, packets, nbytes = self._ints(args["words"])
        c = self._extern("counters", args["extern"])
        if c.name != args["extern"]:
            raise StfError(f"counter_write needs the full name {c.name!r}: simple_switch_CLI "
                           "passes the name it is given to the switch unresolved")
        c.write(index, packets, nbytes)
        return None

    def _cmd_register_read(self, args: dict[str, Any]) -> Optional[str]:
        (index,) = self._ints(args["words"])
        r = self._extern("registers", args["extern"])
        return f"{r.name}[{index}] = {r.get(index)}"

    def _cmd_register_write(self, args: dict[str, Any]) -> Optional[str]:
        index, value = self._ints(args["words"])
        self._extern("registers", args["extern"]).set(index, value)
        return None

    def _cmd_register_reset(self, args: dict[str, Any]) -> Optional[str]:
        self._extern("registers", args["extern"]).reset()
        return None

    @staticmethod
    def _rates(words: list[str]) -> tuple[int, int, int, int]:
        """simple_switch_CLI rates: ``CIR:CBURST PIR:PBURST`` (a v1model meter has two),
        rates in units/µs, as runtime units/s."""
        if len(words) != 2:
            raise StfError(f"a v1model meter takes 2 RATE:BURST pairs, found {len(words)} "
                           "(simple_switch_CLI refuses any other number)")
        (cr, cb), (pr, pb) = [w.split(":", 1) for w in words]
        return round(float(cr) * 1e6), int(cb), round(float(pr) * 1e6), int(pb)

    def _cmd_meter_array_set_rates(self, args: dict[str, Any]) -> Optional[str]:
        m = self._extern("meters", args["extern"])
        cir, cb, pir, pb = self._rates(args["words"])
        for i in range(m.size):
            m.set_config(i, cir, cb, pir, pb)
        return None

    def _cmd_meter_set_rates(self, args: dict[str, Any]) -> Optional[str]:
        index = int(args["words"][0])
        cir, cb, pir, pb = self._rates(args["words"][1:])
        self._extern("meters", args["extern"]).set_config(index, cir, cb, pir, pb)
        return None

    def _cmd_meter_get_rates(self, args: dict[str, Any]) -> Optional[str]:
        (index,) = self._ints(args["words"])
        m = self._extern("meters", args["extern"])
        return f"{m.name}[{index}] = {m.get_config(index)}"

    def _cmd_check_counter(self, args: dict[str, Any]) -> Optional[str]:
        name, index_text = args["counter"], args["index"]
        if index_text.startswith("$"):
            handle = index_text[1:]
            if handle not in self.handles:
                raise self._located(StfError(
                    f"check_counter: no entry was added with '= {handle}'"), "index")
            table_name, entry = self.handles[handle]
            cell = getattr(entry, "counter", None) or getattr(entry, "direct_counter", None)
            if cell is None:
                raise StfError(f"check_counter: entry {handle} of {table_name} has no direct counter")
            packets, nbytes = cell.read()
            where = f"{name}(${handle})"
        else:
            try:
                index = int(index_text, 10) if index_text.isdigit() else cli_int(index_text, "index")
            except StfError:
                raise self._located(StfError(
                    f"check_counter index {index_text!r}: write a number or $ENTRY (the name "
                    "given with '= ENTRY' to an add)"), "index") from None
            c = self._extern("counters", name)
            packets, nbytes = c.read(index)
            where = f"{c.name}({index})"
        actual = packets if args["kind"] == "packets" else nbytes
        if not _OPS[args["op"]](actual, args["value"]):
            self.check_failures.append(
                f"check_counter {where}: {args['kind']} is {actual}, expected "
                f"{args['op']} {args['value']}")
        return None
