"""P4Info ``value_sets``: the parser value sets of a loaded program, as p4c's P4Runtime
serializer writes them (``control-plane/p4RuntimeSerializer.cpp``, ``addValueSet``).

Each ``value_set<T>(size) name;`` of a parser becomes a ``ValueSet`` with the id prefix
``VALUE_SET`` (0x03), the usual preamble (control-plane name, alias, annotations,
documentation) and ``size``; its ``match`` fields follow the element type:

- ``bit<W>`` / ``int<W>`` (a typedef of one too): one field, id 1, no name, ``EXACT``;
- a struct of ``bit<W>`` fields: one field per struct field, ids by p4c's field-id
  allocator (``@id`` first), the field's control-plane name, its annotations except
  ``@match``, and the match type of its ``@match(kind)`` annotation (``EXACT`` without one;
  a match kind P4Runtime does not name goes to ``other_match_type``);
- a serializable enum: one ``EXACT`` field per enum member, named after it, ids 1, 2, ...

p4c refuses (and so does ``p4sim compile``) a struct with a field that is not ``bit<W>``
(a nested struct), a tuple, and anything else, with p4c's messages: these are P4Info
errors, so ``p4sim check`` and ``p4sim stf`` accept such value sets, as p4c-bm2-ss does
without ``--p4runtime-files``.

Example::

    >>> from p4sim.engine import load_program                     # doctest: +SKIP
    >>> st = SymbolTable(); add_value_set_symbols(st, prog)       # doctest: +SKIP
    >>> st.assign_ids(); add_value_sets(info, st, prog)           # doctest: +SKIP
    >>> MATCH_TYPES["ternary"] == P.MatchField.TERNARY
    True
"""
from __future__ import annotations

from typing import Any, Optional

from p4.config.v1 import p4info_pb2 as P

from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.frontend.types import BitT, EnumT, StructLikeT, TupleT, bit_width, strip_new
from p4sim.p4info_symbols import (
    SymbolTable, _add_annotations, _add_doc, _ann, _ann_int, _ann_string, _field_ids, _preamble,
)

PREFIX_VALUE_SET = P.P4Ids.VALUE_SET
MATCH_TYPES = {"exact": P.MatchField.EXACT, "lpm": P.MatchField.LPM, "ternary": P.MatchField.TERNARY,
               "range": P.MatchField.RANGE, "optional": P.MatchField.OPTIONAL}
_STRUCT_FIELD_ERROR = ("Unsupported type argument for Value Set; this version of P4Runtime requires "
                       "that when the type parameter of a Value Set is a struct, all the fields of the "
                       "struct must be of type bit<W>, but {} is not")
_TUPLE_ERROR = ("{}: Unsupported type argument for Value Set; this version of P4Runtime requires the "
                "type parameter of a Value Set to be a bit<W>, a struct of bit<W> fields, or a "
                "serializable enum")
_INVALID_ERROR = ("{}: invalid type parameter for Value Set; it must be one of bit<W>, struct, tuple "
                  "or serializable enum")


def _value_sets(prog: Any) -> dict[str, tuple[A.ValueSetDecl, Any]]:
    return dict(getattr(prog, "value_set_decls", {}) or {})


def add_value_set_symbols(st: SymbolTable, prog: Any) -> None:
    """Add every parser value set of ``prog`` to the symbol table (``@id`` honoured)."""
    for fq, (decl, _) in _value_sets(prog).items():
        st.add(PREFIX_VALUE_SET, fq, _ann_int(_ann(decl.annotations, "id")))


def _struct_decl(prog: Any, name: str) -> Optional[A.StructLikeDecl]:
    for d in getattr(getattr(prog, "ast", None), "decls", None) or []:
        if isinstance(d, A.StructLikeDecl) and d.name == name:
            return d
    return None


def _match_type(match: Any, anns: list[A.Annotation]) -> None:
    """The match type of a struct field's ``@match(kind)`` (``EXACT`` without one)."""
    a = _ann(anns, "match")
    kind = a.raw.strip() if a is not None else "exact"
    if kind == "selector":
        assert a is not None
        raise P4Error(f"unsupported match type @match({kind}) for Value Set '@match' annotation", a.loc)
    if kind in MATCH_TYPES:
        match.match_type = MATCH_TYPES[kind]
    else:
        match.other_match_type = kind


def _struct_matches(vs: P.ValueSet, t: StructLikeT, prog: Any) -> None:
    decl = _struct_decl(prog, t.name)
    fields = decl.fields if decl is not None else []
    by_name = {f.name: f for f in fields}
    anns_of = [by_name[n].annotations if n in by_name else t.annotations.get(n, []) for n, _ in t.fields]
    for (fname, ft), fid, anns in zip(t.fields, _field_ids(anns_of), anns_of):
        if not isinstance(strip_new(ft), BitT):
            loc = by_name[fname].loc if fname in by_name else None
            raise P4Error(_STRUCT_FIELD_ERROR.format(fname), loc)
        m = vs.match.add()
        m.id = fid
        m.name = _ann_string(_ann(anns, "name")) or fname
        _add_annotations(m, [a for a in anns if a.name != "match"])
        _add_doc(m, anns)
        m.bitwidth = bit_width(ft) or 0
        _match_type(m, anns)


def add_value_sets(info: P.P4Info, st: SymbolTable, prog: Any) -> None:
    """Append the ``value_sets`` of ``prog`` to ``info`` (after ``st.assign_ids()``)."""
    for fq, (decl, t) in _value_sets(prog).items():
        vs = info.value_sets.add()
        _preamble(vs, st, PREFIX_VALUE_SET, fq, decl.annotations)
        et = strip_new(t)
        if isinstance(et, BitT):
            m = vs.match.add()
            m.id = 1
            m.bitwidth = et.width
            m.match_type = P.MatchField.EXACT
        elif isinstance(et, StructLikeT) and et.kind == "struct":
            _struct_matches(vs, et, prog)
        elif isinstance(et, EnumT) and et.underlying is not None:
            for index, member in enumerate(et.members, start=1):
                m = vs.match.add()
                m.id = index
                m.name = member
                m.bitwidth = et.underlying.width
                m.match_type = P.MatchField.EXACT
        elif isinstance(et, TupleT):
            raise P4Error(_TUPLE_ERROR.format(fq), decl.loc)
        else:
            raise P4Error(_INVALID_ERROR.format(fq), decl.loc)
        vs.size = int(getattr(prog.state.value_sets.get(fq), "size", 0))
