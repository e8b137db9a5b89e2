"""Typed YAML sections for the job file of ``python -m sim predict``: one dataclass per
section, each value checked against the field's annotation, unknown and missing fields
refused naming them, in the message shape of the scenario files (``sim.scenario``):
``"job.yaml: model.hiden: unknown field (known: ...)"``.

Annotations understood: ``int``, ``float`` (an int is accepted), ``str``, ``bool`` and
``Optional[...]`` of those. A field listed in the class's ``REQUIRED`` tuple must be given.

Example::

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class S:
    ...     REQUIRED = ("a",)
    ...     a: int = 0
    ...     b: float = 1.0
    >>> parse_section({"a": 3, "b": 2}, "s", S, "j.yaml")
    S(a=3, b=2.0)
    >>> parse_section({"b": 2}, "s", S, "j.yaml")
    Traceback (most recent call last):
    ...
    sim.topology.SimInputError: j.yaml: s.a: missing
"""
from __future__ import annotations

from dataclasses import fields
from typing import Any

from sim.topology import SimInputError

_TYPES: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool}


def _check(value: Any, annotation: str, where: str) -> Any:
    optional = annotation.startswith("Optional[")
    base = annotation[len("Optional["):-1] if optional else annotation
    if value is None and optional:
        return None
    want = _TYPES[base]
    if want is bool:
        ok = isinstance(value, bool)
    elif want is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = isinstance(value, want) and not isinstance(value, bool)
    if not ok:
        raise SimInputError(f"{where}: must be {base}{' or null' if optional else ''}, got {value!r}")
    return float(value) if want is float else value


def parse_section(data: Any, path: str, cls: type, source: str) -> Any:
    """Build ``cls`` from the mapping ``data`` (None: every default); ``SimInputError``
    names ``source: path.field`` and why."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SimInputError(f"{source}: {path}: must be a mapping, got {type(data).__name__}")
    known = {f.name: f for f in fields(cls)}
    for key in data:
        if key not in known:
            raise SimInputError(f"{source}: {path}.{key}: unknown field (known: {', '.join(sorted(known))})")
    for key in getattr(cls, "REQUIRED", ()):
        if data.get(key) is None:
            raise SimInputError(f"{source}: {path}.{key}: missing")
    kw = {k: _check(v, str(known[k].type), f"{source}: {path}.{k}") for k, v in data.items()}
    return cls(**kw)


__all__ = ["parse_section"]
