"""The sampling entries of GOR's loop (``FabricIngress.sampling.config``: ``egress_spec = port
→ sampling.sample(one_in_n)``), turned on at congested ports and at the first link of every
move the loop must confirm.

:class:`Sampling` owns the entries GOR has programmed (link → ``one_in_n``):
:meth:`Sampling.enable`, :meth:`Sampling.disable`, and :meth:`Sampling.release`, which
turns a link's sampling off only when its alarm is CLEAR and nothing else needs it (the
``needed`` callback the loop gives: a move to confirm, a follow-up round, a dead-link
probe, an override's liveness probe). A write that fails is reported
(:meth:`LoopOutputs.error <controller.gor.shared.LoopOutputs.error>`), never raised out of
a tick. On the decision path the loop does not write at once: :meth:`Sampling.request`
notes the link and :meth:`Sampling.flush` writes every noted link once the round's orders
are out (a P4Runtime write takes 3–80 ms on the testbed: before, an alarm's sampling write
delayed the round and its first order by that much).

Example (fakes for the switches, see ``tests/controller/test_gor_loop.py``)::

    >>> sampling = Sampling(state, one_in_n=100, needed=lambda link: False)   # doctest: +SKIP
    >>> sampling.enable(("b0r0l0", 3), t_s=1.0)                              # doctest: +SKIP
    True
"""
from __future__ import annotations

from typing import Callable, Iterator, Optional

from controller.gor.decisions import AlarmLevel, LinkKey
from controller.gor.shared import LoopState
from controller.gor.tables import SAMPLING_ACTION, SAMPLING_KEY, SAMPLING_TABLE


class Sampling:
    """The sampling entries GOR has programmed, link → ``one_in_n`` (see the module
    docstring). ``needed(link)`` says whether anything but an alarm still needs a link's
    sampling; ``flows`` is told every link's ratio.
    """

    def __init__(self, state: LoopState, *, one_in_n: int, needed: Callable[[LinkKey], bool]) -> None:
        self._tables, self._flows, self._alarms, self._out = state.tables, state.flows, state.alarms, state.out
        self.one_in_n = one_in_n
        self.needed = needed
        self.on: dict[LinkKey, int] = {}              # link → one_in_n programmed
        self.since: dict[LinkKey, float] = {}         # link → t_s it was turned on
        self.due: dict[LinkKey, float] = {}           # link → t_s it was requested (not yet written)

    def __contains__(self, link: object) -> bool:
        return link in self.on

    def __iter__(self) -> Iterator[LinkKey]:
        return iter(self.on)

    def get(self, link: LinkKey) -> Optional[int]:
        """``one_in_n`` programmed at ``link`` (None: no sampling there)."""
        return self.on.get(link)

    def enable(self, key: LinkKey, t_s: float = 0.0) -> bool:
        """Sample one packet in ``one_in_n`` at ``key``'s egress port; False when the write
        failed (reported; the caller may try again on a later tick)."""
        sw, port = key
        try:
            self._tables.write(sw, SAMPLING_TABLE, {SAMPLING_KEY: port}, SAMPLING_ACTION,
                               {"one_in_n": self.one_in_n})
        except Exception as exc:  # noqa: BLE001 — a dead switch must not stop the loop
            self._out.error(f"{sw}: sampling on port {port} not enabled: {type(exc).__name__}: {exc}")
            return False
        self.on[key] = self.one_in_n
        self.since[key] = t_s
        self._flows.set_sampling(key, self.one_in_n)
        return True

    def request(self, key: LinkKey, t_s: float = 0.0) -> int:
        """Note that ``key`` needs sampling; :meth:`flush` writes it. Returns the ratio
        in force or to be written (``one_in_n``).

        >>> from types import SimpleNamespace as NS
        >>> written = []
        >>> tables = NS(write=lambda sw, table, match, action, params: written.append((sw, match)))
        >>> state = NS(tables=tables, flows=NS(set_sampling=lambda key, n: None), alarms=None, out=None)
        >>> s = Sampling(state, one_in_n=1, needed=lambda link: False)
        >>> s.request(("b0r0l0", 3), 1.0), written, s.wanted(("b0r0l0", 3))
        (1, [], True)
        >>> s.flush(), written
        ([('b0r0l0', 3)], [('b0r0l0', {'standard_metadata.egress_spec': 3})])
        """
        got = self.on.get(key)
        if got is not None:
            return got
        self.due.setdefault(key, t_s)
        return self.one_in_n

    def wanted(self, key: LinkKey) -> bool:
        """Sampling is on at ``key``, or requested and about to be written."""
        return key in self.on or key in self.due

    def flush(self) -> list[LinkKey]:
        """Write every link :meth:`request` noted (oldest first); the links now on. A
        failed write is reported and forgotten: the caller asks again (the loop does for
        every alarm on each tick)."""
        done = []
        while self.due:
            key = next(iter(self.due))
            t_s = self.due.pop(key)
            if key not in self.on and self.enable(key, t_s):
                done.append(key)
        return done

    def adopt(self, key: LinkKey, one_in_n: int, t_s: float) -> None:
        """Record an entry found in the switch (a predecessor's) as GOR's own."""
        self.on[key] = one_in_n
        self.since[key] = t_s
        self._flows.set_sampling(key, one_in_n)

    def disable(self, key: LinkKey) -> None:
        """Delete ``key``'s sampling entry (nothing when there is none)."""
        self.due.pop(key, None)
        if self.on.pop(key, None) is None:
            return
        self.since.pop(key, None)
        sw, port = key
        try:
            self._tables.delete(sw, SAMPLING_TABLE, {SAMPLING_KEY: port})
        except Exception as exc:  # noqa: BLE001
            self._out.error(f"{sw}: sampling on port {port} not disabled: {type(exc).__name__}: {exc}")

    def release(self, link: LinkKey) -> None:
        """Turn ``link``'s sampling off when its alarm is CLEAR and nothing needs it."""
        if (self.wanted(link) and not self.needed(link)
                and self._alarms.level(link) == AlarmLevel.CLEAR):
            self.disable(link)


__all__ = ["Sampling"]
