"""P4Info symbols: ids (the Jenkins hash of a name, ``@id`` first, linear probing),
aliases (the shortest unique suffix), preambles, annotations and documentation — what
:mod:`p4sim.p4info` and its parts (:mod:`p4sim.p4info_values`, :mod:`p4sim.p4info_names`)
share; it imports none of them.

>>> symbol_id(0x01, "NoAction")            # an action's id, as p4c gives it
21257015
"""
from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from p4.config.v1 import p4info_pb2 as P

from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.frontend.lexer import tokenize

PREFIX_ACTION = P.P4Ids.ACTION
PREFIX_TABLE = P.P4Ids.TABLE
PREFIX_CONTROLLER_HEADER = P.P4Ids.CONTROLLER_HEADER
PREFIX_ACTION_PROFILE = P.P4Ids.ACTION_PROFILE
PREFIX_COUNTER = P.P4Ids.COUNTER
PREFIX_DIRECT_COUNTER = P.P4Ids.DIRECT_COUNTER
PREFIX_METER = P.P4Ids.METER
PREFIX_DIRECT_METER = P.P4Ids.DIRECT_METER
PREFIX_REGISTER = P.P4Ids.REGISTER
PREFIX_DIGEST = P.P4Ids.DIGEST

# annotations that P4Info carries elsewhere (preamble name/id, documentation)
_SKIPPED_ANNOTATIONS = {"name", "id", "brief", "description"}


# --------------------------------------------------------------------------- ids and aliases
def jenkins_hash(name: str) -> int:
    """Jenkins one-at-a-time hash (32 bits) of ``name``'s bytes, as p4c computes it.

    >>> hex(jenkins_hash("NoAction") & 0xFFFFFF)
    '0x445b37'
    """
    h = 0
    for b in name.encode():
        h = (h + b) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return h


def symbol_id(prefix: int, name: str) -> int:
    """The id p4c gives ``name`` when nothing collides: ``prefix << 24 | hash & 0xFFFFFF``."""
    return (prefix << 24) | (jenkins_hash(name) & 0xFFFFFF)


class SymbolTable:
    """P4Runtime symbols by type, with p4c's id assignment and aliases.

    >>> st = SymbolTable(); st.add(PREFIX_TABLE, "c.t"); st.add(PREFIX_ACTION, "NoAction")
    >>> st.assign_ids(); st.alias("c.t"), st.id(PREFIX_TABLE, "c.t") >> 24
    ('t', 2)
    """

    def __init__(self) -> None:
        self._tables: dict[int, dict[str, Optional[int]]] = {}
        self._assigned: set[int] = set()
        self._symbols: set[str] = set()
        self._suffix_counts: dict[tuple[str, ...], int] = {}

    def add(self, prefix: int, name: str, explicit_id: Optional[int] = None) -> None:
        """Add a symbol (a duplicate name of the same type is ignored, as in p4c)."""
        table = self._tables.setdefault(prefix, {})
        if name in table:
            return
        ident: Optional[int] = None
        if explicit_id is not None:
            top = explicit_id & 0xFF000000
            if top not in (0, prefix << 24):
                raise ValueError(f"{name}: @id {explicit_id:#x} has the wrong 8-bit prefix")
            ident = explicit_id | (prefix << 24)
            if ident in self._assigned:
                raise ValueError(f"@id {ident:#x} is assigned to multiple declarations")
            self._assigned.add(ident)
        table[name] = ident
        if name not in self._symbols:
            self._symbols.add(name)
            parts = tuple(name.split("."))
            for n in range(1, len(parts) + 1):
                suf = parts[-n:]
                self._suffix_counts[suf] = self._suffix_counts.get(suf, 0) + 1

    def assign_ids(self) -> None:
        """Give every symbol without an ``@id`` its hashed id (sorted names, linear probing)."""
        for prefix in sorted(self._tables):
            table = self._tables[prefix]
            for name in sorted(n for n, i in table.items() if i is None):
                start = jenkins_hash(name)
                value = start
                while ((prefix << 24) | (value & 0xFFFFFF)) in self._assigned:
                    value = (value + 1) & 0xFFFFFFFF
                    if value == start:
                        raise ValueError(f"no available id to represent {name} in P4Runtime")
                ident = (prefix << 24) | (value & 0xFFFFFF)
                self._assigned.add(ident)
                table[name] = ident

    def id(self, prefix: int, name: str) -> int:
        ident = self._tables[prefix][name]
        assert ident is not None, "assign_ids() first"
        return ident

    def alias(self, name: str) -> str:
        """Shortest unique suffix of dot-separated components."""
        parts = tuple(name.split("."))
        for n in range(1, len(parts) + 1):
            if self._suffix_counts.get(parts[-n:], 0) < 2:
                return ".".join(parts[-n:])
        return name


# --------------------------------------------------------------------------- annotations
def _ann(anns: Iterable[A.Annotation], name: str) -> Optional[A.Annotation]:
    return next((a for a in anns if a.name == name), None)


def _ann_string(a: Optional[A.Annotation]) -> Optional[str]:
    if a is None:
        return None
    if a.exprs and isinstance(a.exprs[0], A.StringLit):
        return a.exprs[0].value
    raw = a.raw.strip()
    return raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == '"' else (raw or None)


def _ann_int(a: Optional[A.Annotation]) -> Optional[int]:
    if a is None:
        return None
    if a.exprs and isinstance(getattr(a.exprs[0], "value", None), int):
        return int(a.exprs[0].value)
    return int(a.raw.strip(), 0)


# annotations p4c's front end or P4Runtime serializer parses (ParseAnnotations,
# ParseP4RuntimeAnnotations): P4Info writes their body as expressions, as written here
_PARSED_ANNOTATIONS = frozenset((
    "atomic", "defaultonly", "hidden", "likely", "noSideEffects", "optional", "pure", "tableonly",
    "unlikely", "disable_optimization", "unroll", "nounroll", "name", "deprecated", "noWarn", "length",
    "pkginfo", "synchronous", "field_list", "match", "command_line", "controller_header", "id", "brief",
    "description", "platform_property", "max_group_size", "selector_size_semantics", "max_member_weight",
    "p4runtime_translation"))


def annotation_text(a: A.Annotation) -> str:
    """``@name`` or ``@name(body)`` as p4c-bm2-ss writes it in P4Info (ToP4): a body p4c
    does not parse is its tokens, each separated by one space (``@refers_to(vrf_table ,
    vrf_id)``, ``builtin : : t``); a parsed one as written.

    Example::

        >>> annotation_text(A.Annotation("refers_to", raw="builtin::t, id"))
        '@refers_to(builtin : : t , id)'
    """
    if not (a.raw.strip() or a.exprs):
        return f"@{a.name}"
    if a.name in _PARSED_ANNOTATIONS:
        return f"@{a.name}({a.raw})"
    try:
        toks = [t.text for t in tokenize(a.raw, "<annotation>") if t.kind != "eof"]
    except P4Error:
        return f"@{a.name}({a.raw})"
    return f"@{a.name}({' '.join(toks)})"


def _add_annotations(msg: Any, anns: Iterable[A.Annotation]) -> None:
    for a in anns:
        if a.name in _SKIPPED_ANNOTATIONS or a.structured:
            continue
        msg.annotations.append(annotation_text(a))


def _add_doc(msg: Any, anns: Sequence[A.Annotation]) -> None:
    brief, desc = _ann_string(_ann(anns, "brief")), _ann_string(_ann(anns, "description"))
    if brief:
        msg.doc.brief = brief
    if desc:
        msg.doc.description = desc


def _preamble(msg: Any, st: SymbolTable, prefix: int, name: str, anns: Sequence[A.Annotation],
              alias: Optional[str] = None, symbol: Optional[str] = None) -> None:
    pre = msg.preamble
    pre.id = st.id(prefix, symbol or name)
    pre.name = name
    pre.alias = alias if alias is not None else st.alias(name)
    _add_annotations(pre, anns)
    _add_doc(pre, anns)


def _field_ids(items: Sequence[Sequence[A.Annotation]]) -> list[int]:
    """1-based ids in order, ``@id`` first (p4c's FieldIdAllocator)."""
    fixed = [_ann_int(_ann(anns, "id")) for anns in items]
    used = {i for i in fixed if i is not None}
    out, nxt = [], 1
    for f in fixed:
        if f is not None:
            out.append(f)
            continue
        while nxt in used:
            nxt += 1
        out.append(nxt)
        used.add(nxt)
    return out


__all__ = ["PREFIX_ACTION", "PREFIX_ACTION_PROFILE", "PREFIX_CONTROLLER_HEADER", "PREFIX_COUNTER",
           "PREFIX_DIGEST", "PREFIX_DIRECT_COUNTER", "PREFIX_DIRECT_METER", "PREFIX_METER",
           "PREFIX_REGISTER", "PREFIX_TABLE", "SymbolTable", "annotation_text", "jenkins_hash", "symbol_id"]
