"""Digest queue: values the data plane sends to the controller with ``digest()``.

The v1model driver pushes one ``(digest name, values)`` per ``digest()`` call that
survives to the end of ingress. The P4Runtime server configures each digest
(``DigestEntry.Config``: ``max_timeout_ns``, ``max_list_size``, ``ack_timeout_ns``) and
drains the queue into ``DigestList`` messages, each with a fresh ``list_id``. This module
only stores and batches; deduplication until acknowledgement and timers are the server's
job (it has the clock and the stream), but the server may hand the queue what it holds
(:meth:`DigestQueue.hold`: values waiting in a list or sent and not yet acknowledged), and
a value it holds is then dropped when it is pushed, as BMv2's learning filter drops it
when the packet learns it.

The queue tells its reader when to look: :meth:`DigestQueue.take_due` is true once a
digest has received, since it was last drained, as many values as
:meth:`DigestQueue.wake_after` asked for (1 unless asked: every value). The P4Runtime
streamer asks for what can complete a list it holds, so it is not woken for each
sampled packet (issue 32: a leaf's streamer woke ~430 times a second for ~110 lists).
Callers serialise (the device lock: the data plane pushes under it, the streamer
drains under it).

Example::

    >>> q = DigestQueue()
    >>> q.set_config("mac_learn_digest_t", max_list_size=2)
    >>> for mac in (1, 2, 3):
    ...     q.push("mac_learn_digest_t", (mac, 5))
    >>> [(d.list_id, d.values) for d in q.drain()]
    [(1, [(1, 5), (2, 5)]), (2, [(3, 5)])]
    >>> q.wake_after("mac_learn_digest_t", 2)
    False
    >>> q.push("mac_learn_digest_t", (4, 5)); q.take_due()
    False
    >>> q.push("mac_learn_digest_t", (5, 5)); q.take_due(), q.take_due()
    (True, False)
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Container, Optional

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
        self._since_drain: dict[str, int] = {}    # values pushed per name since it was drained
        self._wake_at: dict[str, int] = {}        # wake_after's counts (absent: 1)
        self._due = False
        self._held: dict[str, Container[tuple[Any, ...]]] = {}

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
        self._wake_at.pop(name, None)       # a new list size: the next value wakes the reader

    def get_config(self, name: str) -> Optional[DigestConfig]:
        """The digest's configuration, None when not configured."""
        return self._configs.get(name)

    def delete_config(self, name: str) -> None:
        """P4Runtime DELETE of a ``DigestEntry``: the digest's pending values are dropped."""
        if name not in self._configs:
            raise RuntimeStateError("NOT_FOUND", f"digest {name} is not configured")
        del self._configs[name]
        self._pending = deque(p for p in self._pending if p[0] != name)
        self._wake_at.pop(name, None)

    def hold(self, name: str, held: Optional[Container[tuple[Any, ...]]]) -> None:
        """Values of ``name`` that :meth:`push` drops from now on (those in ``held`` when
        pushed; None: none)."""
        if held is None:
            self._held.pop(name, None)
        else:
            self._held[name] = held

    def push(self, name: str, values: tuple[Any, ...], now_ns: int = 0) -> None:
        """Record one ``digest()`` (called by the v1model driver); nothing when ``values``
        are held (:meth:`hold`)."""
        values = tuple(values)
        held = self._held.get(name)
        if held is not None and values in held:
            return
        self._pending.append((name, values, now_ns))
        count = self._since_drain.get(name, 0) + 1
        self._since_drain[name] = count
        if count >= self._wake_at.get(name, 1):
            self._due = True

    def take_due(self) -> bool:
        """Whether a digest reached its :meth:`wake_after` count since the last call (which
        clears it): the data plane's ``on_digest`` wakes the reader only then."""
        due, self._due = self._due, False
        return due

    def wake_after(self, name: str, values: int) -> bool:
        """Make :meth:`take_due` true once ``name`` has ``values`` (>= 1) values pushed since
        it was last drained (until the next :meth:`drain`, :meth:`set_config` or
        :meth:`delete_config` of it, which go back to 1); returns whether it already has
        them (then :meth:`take_due` is true too)."""
        if values < 1:
            raise ValueError(f"digest {name}: wake_after needs at least 1 value, not {values}")
        self._wake_at[name] = values
        if self._since_drain.get(name, 0) >= values:
            self._due = True
            return True
        return False

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
        if name is None:
            self._since_drain.clear()
            self._wake_at.clear()
            self._due = False                   # whatever made it due was just taken
        else:
            self._since_drain.pop(name, None)
            self._wake_at.pop(name, None)
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
