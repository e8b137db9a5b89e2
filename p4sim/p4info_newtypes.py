"""User-defined types (``type bit<W> T;``) in P4Info, as p4c's P4Runtime serializer
writes them (``control-plane/typeSpecConverter.cpp``, ``bytestrings.cpp``).

* A match field, action parameter or controller-header field whose type is a ``type``
  gets ``type_name { name: T }`` (T as declared, even under ``@name``), and
  ``type_info.new_types`` gets an entry keyed by T's control-plane name (``@name`` wins).
* With ``@p4runtime_translation("uri", N)`` (or ``bit<N>``) on T, the entry is
  ``translated_type { uri sdn_bitwidth: N }`` and the field's ``bitwidth`` is N, not the
  width of T in the program; with ``string`` it is ``sdn_string {}`` and no bitwidth.
  Without it the entry is ``original_type`` (the type under every ``type`` of the chain).
* Only the outermost ``type`` counts: ``type T1 T2;`` over a translated ``T1`` is not
  translated, and only ``T2`` is listed. The annotation on a ``typedef`` is ignored, as
  p4c's type map replaces typedefs by what they name before P4Info is written.
* The entry carries T's other annotations (not ``@name``, ``@id``, ``@brief``,
  ``@description``), as ``Helpers::addAnnotations`` does.

Example::

    >>> from p4sim.frontend.types import BitT, NewT
    >>> from p4sim.frontend.parser import parse_text
    >>> nt = NewTypes(parse_text('@p4runtime_translation("org/port", 32) type bit<9> port_t;', "t.p4"))
    >>> nt.width(NewT("port_t", BitT(9)), 9), nt.type_name(NewT("port_t", BitT(9)))
    (32, 'port_t')
    >>> info = P.P4Info(); nt.add(info, NewT("port_t", BitT(9)))
    >>> info.type_info.new_types["port_t"].translated_type.sdn_bitwidth
    32
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Optional

from p4.config.v1 import p4info_pb2 as P

from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.frontend.types import BitT, BoolT, NewT, strip_new
from p4sim.frontend.uses import removed_declarations

ANNOTATION = "p4runtime_translation"
# annotations P4Info carries elsewhere or not at all on a new type
_NOT_COPIED = {"name", "id", "brief", "description", ANNOTATION}


@dataclass(frozen=True, slots=True)
class Translation:
    """``@p4runtime_translation(uri, N)``: ``sdn_bitwidth`` None means ``string``.

    >>> Translation("org/port", 32).controller_width
    32
    """

    uri: str
    sdn_bitwidth: Optional[int]

    @property
    def controller_width(self) -> int:
        """The ``bitwidth`` p4c writes for a field of this type (0 for ``string``)."""
        return self.sdn_bitwidth or 0


def translation_of(decl: A.TypedefDecl) -> Optional[Translation]:
    """The translation annotation of a ``type`` declaration, if any (the parser has
    checked its grammar: a string, then ``string``, ``bit<N>`` or an integer)."""
    ann = next((a for a in decl.annotations if a.name == ANNOTATION), None)
    if ann is None or not ann.exprs or len(ann.exprs) != 2 or not isinstance(ann.exprs[0], A.StringLit):
        return None
    second = ann.exprs[1]
    if isinstance(second, A.IntLit):
        return Translation(ann.exprs[0].value, int(second.value))
    inner = getattr(second, "type", None)
    if isinstance(inner, A.BitType) and isinstance(inner.width, A.IntLit):
        return Translation(ann.exprs[0].value, int(inner.width.value))
    return Translation(ann.exprs[0].value, None)


def check_translations(ast: Optional[A.Program]) -> None:
    """Raise the syntax error of the first ``@p4runtime_translation`` whose body is not
    p4c's grammar, on a declaration p4c's front end keeps. p4c-bm2-ss 1.2.5.16 parses that
    body only when it writes P4Info, after removing what is unused (measured): with
    ``bit<8+8>`` on a type nothing keeps, it compiles and writes P4Info; on a type a table
    key, an action, a struct or an extern's signature uses, the compile succeeds without
    ``--p4runtime-files`` and P4Info fails ("Cannot generate P4Info message").

    >>> from p4sim.frontend.parser import parse_text
    >>> check_translations(parse_text('@p4runtime_translation("u", bit<8+8>) type bit<8> t_t;', "t.p4"))
    >>> check_translations(parse_text('@p4runtime_translation("u", bit<8+8>) type bit<8> t_t; '
    ...                               'struct s_t { t_t f; }', "t.p4"))
    Traceback (most recent call last):
    p4sim.errors.P4Error: t.p4:1:34: error: syntax error, unexpected +, expecting > or R_ANGLE_SHIFT
    """
    if ast is None or not any(isinstance(n, A.Annotation) and n.deferred_error for n in A.iter_nodes(ast)):
        return
    gone = removed_declarations(ast)

    def kept(node: A.Node) -> Any:
        if id(node) in gone:
            return
        if isinstance(node, A.Annotation) and node.deferred_error:
            raise P4Error(*node.deferred_error)
        for f in dataclasses.fields(node):  # type: ignore[arg-type]
            value = getattr(node, f.name)
            for child in value if isinstance(value, list) else (value,):
                if isinstance(child, A.Node):
                    kept(child)

    kept(ast)


def _control_plane_name(decl: A.TypedefDecl) -> str:
    ann = next((a for a in decl.annotations if a.name == "name"), None)
    if ann is not None and ann.exprs and isinstance(ann.exprs[0], A.StringLit):
        return ann.exprs[0].value.lstrip(".")
    return decl.name


class NewTypes:
    """The program's ``type`` declarations, as P4Info needs them."""

    def __init__(self, ast: Optional[A.Program]) -> None:
        self._decls: dict[str, A.TypedefDecl] = {
            d.name: d for d in getattr(ast, "decls", None) or []
            if isinstance(d, A.TypedefDecl) and d.is_newtype}

    def translated_names(self) -> set[str]:
        """The declared names of the translated types (what ``type_name`` carries)."""
        return {name for name, d in self._decls.items() if translation_of(d) is not None}

    def translation(self, t: Any) -> Optional[Translation]:
        """The translation of ``t`` when it is a translated ``type`` (the outermost one)."""
        decl = self._decls.get(t.name) if isinstance(t, NewT) else None
        return translation_of(decl) if decl is not None else None

    def width(self, t: Any, program_width: int) -> int:
        """The P4Info ``bitwidth`` of a value of type ``t`` (p4c's ``getTypeWidth``)."""
        tr = self.translation(t)
        return tr.controller_width if tr is not None else program_width

    @staticmethod
    def type_name(t: Any) -> Optional[str]:
        """``type_name`` of a field of type ``t`` (p4c's ``getTypeName``: the declared name)."""
        return t.name if isinstance(t, NewT) else None

    def spec_name(self, t: NewT) -> str:
        """The name a ``P4DataTypeSpec.new_type`` and the ``new_types`` key use."""
        decl = self._decls.get(t.name)
        return _control_plane_name(decl) if decl is not None else t.name

    def add(self, info: P.P4Info, t: Any, annotate: Optional[Callable[[Any, list[A.Annotation]], None]] = None) -> None:
        """Add ``t`` to ``type_info.new_types`` when it is a ``type`` (once per name)."""
        if not isinstance(t, NewT):
            return
        decl = self._decls.get(t.name)
        key = self.spec_name(t)
        if key in info.type_info.new_types:
            return
        under = strip_new(t)
        tr = translation_of(decl) if decl is not None else None
        if tr is not None and not isinstance(under, BitT):
            raise P4Error(f"{t.name}: P4Runtime requires the underlying type for a user-defined type with the "
                          f"@p4runtime_translation annotation to be bit<W>; it cannot be '{under}'",
                          getattr(decl, "loc", None))
        spec = info.type_info.new_types[key]
        if annotate is not None and decl is not None:
            annotate(spec, [a for a in decl.annotations if a.name not in _NOT_COPIED])
        if tr is not None:
            spec.translated_type.uri = tr.uri
            if tr.sdn_bitwidth is None:
                spec.translated_type.sdn_string.SetInParent()
            else:
                spec.translated_type.sdn_bitwidth = tr.sdn_bitwidth
        elif isinstance(under, BoolT):
            spec.original_type.bool.SetInParent()
        elif isinstance(under, BitT) and under.signed:
            spec.original_type.bitstring.int.bitwidth = under.width
        elif isinstance(under, BitT):
            spec.original_type.bitstring.bit.bitwidth = under.width
        else:
            raise P4Error(f"{t.name}: P4Info cannot describe a user-defined type over '{under}' "
                          "(p4c-bm2-ss fails on it when writing P4Info)", getattr(decl, "loc", None))
