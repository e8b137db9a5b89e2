"""Headers that are not a whole number of bytes, refused where p4c-bm2-ss refuses them.

BMv2 stores a header as bytes, so p4c-bm2-ss's JSON converter (``HeaderConverter``) stops
on a header type whose fields (a varbit counted at its maximum width) total a width that
is not a multiple of 8: "header odd_t: Found header with fields totaling 18 bits.  BMv2 target
only supports headers with fields totaling a multiple of 8 bits." It sees only the types
that reach the JSON: those of the v1model blocks' parameters (the headers and metadata
structs, through nested structs, stacks and unions) and those of the local variables
p4c's front end keeps (an unreferenced one is removed first). A header type declared and
never instantiated, or only in an unreferenced local, compiles.

The compiler records each odd header type where it is declared (:func:`odd_header_of`
finds one inside a type); ``engine/program.py`` checks the blocks' parameters and
``engine/statements.py`` the locals.

Example::

    >>> from p4sim.frontend.types import BitT, HeaderT, StructT
    >>> odd = HeaderT("odd_t", [("a", BitT(9)), ("b", BitT(9))])
    >>> odd_header_of(StructT("headers_t", [("o", odd)])).name
    'odd_t'
    >>> odd_header_message(odd)
    'header odd_t: Found header with fields totaling 18 bits.  BMv2 target only supports headers with fields totaling a multiple of 8 bits.'
"""
from __future__ import annotations

from typing import Optional

from p4sim.frontend.types import HeaderT, P4Type, StackT, StructLikeT, strip_new


def odd_header_of(t: P4Type, _seen: Optional[set[int]] = None) -> Optional[HeaderT]:
    """The first header type inside ``t`` (itself, a field, a stack's element, a union's
    member, at any depth) whose width is not a multiple of 8 bits, or None."""
    t = strip_new(t)
    seen = set() if _seen is None else _seen
    if id(t) in seen:
        return None
    seen.add(id(t))
    if isinstance(t, HeaderT):
        return t if t.width_bits % 8 else None
    if isinstance(t, StackT):
        return odd_header_of(t.elem, seen)
    if isinstance(t, StructLikeT):
        for _, ft in t.fields:
            found = odd_header_of(ft, seen)
            if found is not None:
                return found
    return None


def odd_header_message(h: HeaderT) -> str:
    """p4c-bm2-ss's message for the header type ``h``."""
    return (f"header {h.name}: Found header with fields totaling {h.width_bits} bits.  BMv2 target only "
            "supports headers with fields totaling a multiple of 8 bits.")


__all__ = ["odd_header_message", "odd_header_of"]
