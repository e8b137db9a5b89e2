"""The control-plane name checks p4c's P4Runtime serializer makes before it writes P4Info
(so ``p4sim compile`` refuses what ``p4c-bm2-ss --p4runtime-files`` refuses, while
``p4sim check``/``stf`` accept it, as p4c-bm2-ss does without P4Info): two actions with
one control-plane name, and two objects of one kind with one name.

Example::

    >>> check_duplicate_names([])            # nothing to refuse
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from p4sim.errors import P4Error
from p4sim.frontend import ast as A
from p4sim.p4info_symbols import _ann, _ann_string


def check_action_names(ast: Optional[A.Program], kept: Optional[set[int]] = None) -> None:
    """Refuse two actions with one control-plane name, as p4c does when it writes P4Info
    (DuplicateActionControlPlaneNameCheck, run only with ``--p4runtime-files``): a
    top-level action is ``.name``, a control's is ``.Control.name``, unless ``@name``
    gives an absolute (``.x``) or a relative name. ``kept``: the ``id`` of each action
    declaration p4c's front end keeps (None: all); the others are not checked (p4c
    removes an unused action before, measured on p4c-bm2-ss 1.2.5.16).

    >>> from p4sim.frontend.parser import parse_text
    >>> check_action_names(parse_text('@name(".a") action x() { } action a() { }', "d.p4"))
    Traceback (most recent call last):
    p4sim.errors.P4Error: d.p4:1:28: error: a: conflicting control plane name: .a
    """
    seen: dict[str, A.ActionDecl] = {}

    def check(decl: A.ActionDecl, scope: str) -> None:
        if kept is not None and id(decl) not in kept:
            return
        written = _ann_string(_ann(decl.annotations, "name"))
        name = written or decl.name
        absolute = name if name.startswith(".") else f"{scope}.{name}"
        if absolute in seen:
            raise P4Error(f"{name}: conflicting control plane name: "
                          f"{_ann_string(_ann(seen[absolute].annotations, 'name')) or absolute}", decl.loc)
        seen[absolute] = decl

    for d in getattr(ast, "decls", None) or []:
        if isinstance(d, A.ActionDecl):
            check(d, "")
        elif isinstance(d, A.ControlDecl):
            for loc in d.locals:
                if isinstance(loc, A.ActionDecl):
                    check(loc, f".{d.name}")


_P4INFO_KINDS = ("table", "action", "action profile", "counter", "direct counter", "meter", "direct meter",
                 "controller packet metadata", "value set", "register", "digest")


def check_duplicate_names(duplicates: Sequence[tuple[str, str]]) -> None:
    """Refuse objects of one kind with one control-plane name (e.g. a table with an
    absolute ``@name`` in a control instantiated twice), with p4c's messages
    (checkForDuplicates: one per duplicate, kinds in P4Info order, then the count).

    >>> check_duplicate_names([("table", "t0")])
    Traceback (most recent call last):
    p4sim.errors.P4Error: error: Name 't0' is used for multiple table objects in the P4Info message
    error: Found 1 duplicate name(s) in the P4Info
    """
    if not duplicates:
        return
    ordered = sorted(duplicates, key=lambda d: _P4INFO_KINDS.index(d[0]))
    lines = [f"Name '{name}' is used for multiple {kind} objects in the P4Info message" for kind, name in ordered]
    lines.append(f"Found {len(ordered)} duplicate name(s) in the P4Info")
    raise P4Error("\nerror: ".join(lines))


_INSTANCE_PROPERTIES = ("implementation", "counters", "meters")


def check_anonymous_properties(tables: Sequence[Any]) -> None:
    """Refuse a table whose ``implementation``, ``counters`` or ``meters`` is an instance
    constructed in place (``implementation = action_profile(32w16)``) without ``@name``:
    P4Runtime has no name for it. p4c's P4Runtime serializer (getExternInstanceFromProperty)
    stops there, with no position; ``tables`` are the table infos (``fqname``, ``decl``).

    >>> t = A.TableDecl("t", [A.TableProperty("implementation", A.Call(A.NameRef("action_profile"), []))])
    >>> check_anonymous_properties([type("TI", (), {"fqname": "MyIngress.t", "decl": t})])
    Traceback (most recent call last):
    p4sim.errors.P4Error: error: Table 'MyIngress.t' has an anonymous table property 'implementation' with no name annotation, which is not supported by P4Runtime
    """
    for ti in tables:
        for name in _INSTANCE_PROPERTIES:
            prop = ti.decl.prop(name)
            if prop is None or not isinstance(prop.value, A.Call):
                continue
            if any(a.name == "name" for a in prop.annotations):
                continue
            raise P4Error(f"Table '{ti.fqname}' has an anonymous table property '{name}' with no name "
                          "annotation, which is not supported by P4Runtime")

