"""How the v1model driver reads the packet replication engine (multicast groups and clone
sessions) of :mod:`p4sim.runtime.pre`.

simple_switch resolves a clone (mirror) session into *copies*: first one copy per node of
the session's multicast group (when the session has one, ``mirroring_add_mc``), then one
copy to the session's egress port (``mirroring_add``). A P4Runtime clone session with
replicas behaves like a session whose multicast group holds those replicas (that is how
the PI server programs BMv2). This module turns both into ``[(port, rid or None), ...]``
so that :mod:`p4sim.v1model.switch` does not depend on the PRE's internal layout.

Example::

    >>> class Pre:
    ...     def replicate(self, mgrp): return [(1, 7), (2, 7)] if mgrp == 5 else []
    ...     def get_clone_session(self, sid): return {"egress_port": 3} if sid == 1 else None
    >>> clone_copies(Pre(), 1)
    [(3, None)]
    >>> clone_copies(Pre(), 9) is None
    True
"""
from __future__ import annotations

from typing import Any, Optional

Copies = list[tuple[int, Optional[int]]]


def replicate(pre: Any, mgrp: int) -> list[tuple[int, int]]:
    """``[(port, rid), ...]`` for multicast group ``mgrp`` (empty when it does not exist)."""
    try:
        out = pre.replicate(mgrp)
    except (KeyError, LookupError):
        return []
    except Exception as exc:  # RuntimeStateError(NOT_FOUND) and friends
        if getattr(exc, "code", None) == "NOT_FOUND":
            return []
        raise
    return [(int(port), int(rid)) for port, rid in out]


def _field(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, dict):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return None


def _lookup_session(pre: Any, session: int) -> Any:
    for meth in ("get_clone_session", "clone_session", "mirroring_get"):
        fn = getattr(pre, meth, None)
        if callable(fn):
            try:
                return fn(session)
            except (KeyError, LookupError):
                return None
            except Exception as exc:
                if getattr(exc, "code", None) == "NOT_FOUND":
                    return None
                raise
    table = getattr(pre, "clone_sessions", None)
    if isinstance(table, dict):
        return table.get(session)
    raise AttributeError("the PRE offers no clone session lookup")


def clone_copies(pre: Any, session: int) -> Optional[Copies]:
    """The copies a clone into ``session`` makes, in simple_switch order; None when the
    session is not configured (simple_switch then makes no clone at all)."""
    cfg = _lookup_session(pre, session)
    if cfg is None:
        return None
    copies: Copies = []
    mgid = _field(cfg, "mgid", "mgrp", "multicast_group")
    replicas = _field(cfg, "replicas")
    if mgid is not None and _field(cfg, "mgid_valid") is not False:
        copies.extend((port, rid) for port, rid in replicate(pre, int(mgid)))
    elif replicas:
        for rep in replicas:
            if isinstance(rep, tuple):
                port, rid = rep[0], rep[1] if len(rep) > 1 else 0
            else:
                port = _field(rep, "egress_port", "port")
                rid = _field(rep, "instance", "rid") or 0
            copies.append((int(port), int(rid)))
    port = _field(cfg, "egress_port", "port")
    if port is not None and _field(cfg, "egress_port_valid") is not False:
        copies.append((int(port), None))
    return copies


def clone_truncation(pre: Any, session: int) -> Optional[int]:
    """P4Runtime ``packet_length_bytes`` of a clone session (None or 0 = whole packet)."""
    try:
        cfg = _lookup_session(pre, session)
    except AttributeError:
        return None
    value = _field(cfg, "packet_length_bytes", "truncate_bytes") if cfg is not None else None
    return int(value) if value else None
