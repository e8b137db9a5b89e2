"""Digest queue: values the data plane sends to the controller with ``digest()``.

The v1model driver pushes one ``(digest name, values)`` per ``digest()`` call that
survives to the end of ingress. The P4Runtime server configures each digest
(``DigestEntry.Config``: ``max_timeout_ns``, ``max_list_size``, ``ack_timeout_ns``) and
drains the queue into ``DigestList`` messages, each with a fresh ``list_id``. This module
only stores and batches; deduplication until acknowledgement and timers are the server's
job (it has the clock and the stream).

Example::

    >>> q = DigestQueue()
    >>> q.set_config("mac_learn_digest_t", max_list_size=2)
    >>> for mac in (1, 2, 3):
    ...     q.push("mac_learn_digest_t", (mac, 5))
    >>> [(d.list_id, d.values) for d in q.drain()]
    [(1, [(1, 5), (2, 5)]), (2, [(3, 5)])]
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Optional

from p4sim.runtime.errors import RuntimeStateError


@dataclass(frozen=True, slots=True)
class DigestConfig:
    """P4Runtime ``DigestEntry.Config``; ``max_list_size`` 0 means unbounded."""

    max_timeout_ns: int = 0
    max_list_size: int = 1
    ack_timeout_ns: int = 0


@dataclass(slots=True)
class DigestList:
    """One batch of digests of the same name, as a P4Runtime ``DigestList``."""

    list_id: int
    digest_name: str
    values: list[tuple[Any, ...]] = field(default_factory=list)
    timestamp_ns: int = 0


class DigestQueue:
    """Pending digest values, in arrival order, per digest name."""

    def __init__(self) -> None:
        self._configs: dict[str, DigestConfig] = {}
        self._pending: deque[tuple[str, tuple[Any, ...], int]] = deque()
        self._next_list_id = 1

    def set_config(self, name: str, max_timeout_ns: int = 0, max_list_size: int = 1,
                   ack_timeout_ns: int = 0) -> None:
        """Configure a digest (P4Runtime INSERT/MODIFY of a ``DigestEntry``)."""
        if min(max_timeout_ns, max_list_size, ack_timeout_ns) < 0:
            raise RuntimeStateError("INVALID_ARGUMENT", f"digest {name}: negative configuration value")
        if name not in self._configs:
            # values generated while the digest was not configured are never sent (BMv2):
            # drop them now, whether or not a reader drained them before this write
            self._pending = deque(p for p in self._pending if p[0] != name)
        self._configs[name] = DigestConfig(max_timeout_ns, max_list_size, ack_timeout_ns)

    def get_config(self, name: str) -> Optional[DigestConfig]:
        """The digest's configuration, None when not configured."""
        return self._configs.get(name)

    def delete_config(self, name: str) -> None:
        """P4Runtime DELETE of a ``DigestEntry``: the digest's pending values are dropped."""
        if name not in self._configs:
            raise RuntimeStateError("NOT_FOUND", f"digest {name} is not configured")
        del self._configs[name]
        self._pending = deque(p for p in self._pending if p[0] != name)

    def push(self, name: str, values: tuple[Any, ...], now_ns: int = 0) -> None:
        """Record one ``digest()`` (called by the v1model driver)."""
        self._pending.append((name, tuple(values), now_ns))

    def __len__(self) -> int:
        return len(self._pending)

    def drain(self, name: Optional[str] = None) -> list[DigestList]:
        """Take every pending value (of ``name``, or all) as lists cut at ``max_list_size``.

        Values of digests that are not configured are batched one list per name
        (unbounded). Lists come out in order of their first value.
        """
        keep: deque[tuple[str, tuple[Any, ...], int]] = deque()
        open_lists: dict[str, DigestList] = {}
        out: list[DigestList] = []
        for item in self._pending:
            dname, values, ts = item
            if name is not None and dname != name:
                keep.append(item)
                continue
            cfg = self._configs.get(dname)
            limit = cfg.max_list_size if cfg is not None else 0
            lst = open_lists.get(dname)
            if lst is None or (limit and len(lst.values) >= limit):
                lst = DigestList(self._next_list_id, dname, [], ts)
                self._next_list_id += 1
                open_lists[dname] = lst
                out.append(lst)
            lst.values.append(values)
        self._pending = keep
        return out
