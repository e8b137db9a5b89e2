"""802.1Qbb PFC on the NIC side: parse the fabric's PAUSE frames and honour them per priority.

Frame format (the one ``p4src/include/control/pfc.p4`` generates): destination
01:80:C2:00:00:01, EtherType 0x8808, opcode 0x0101, a 16-bit class-enable vector (bit i =
priority i), eight 16-bit pause times (priority 0 first), zero padding to 60 bytes.

A PAUSE for priority p with ``q`` quanta stops p for ``q × 512`` bit times at the NIC's line
rate, counted from its arrival; a new PAUSE replaces the deadline; ``q = 0`` resumes at
once. :class:`PfcState` is pure logic: the caller passes the time.

>>> st = PfcState(line_rate_bps=100e6)
>>> st.on_frame(build_pause("02:00:00:00:01:01", {3: 1000}), now=10.0)
[3]
>>> st.is_paused(3, 10.005), st.is_paused(3, 10.006)
(True, False)
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Mapping, Optional

PFC_DST_MAC = bytes.fromhex("0180c2000001")
ETHERTYPE_PFC = 0x8808
PFC_OPCODE = 0x0101
QUANTUM_BITS = 512
PFC_FRAME_LEN = 60
NUM_PRIORITIES = 8

_PFC = struct.Struct("!HHHHHHHHHHH")   # ethertype, opcode, vector, 8 times


def parse_pause(frame: bytes) -> Optional[dict[int, int]]:
    """``{priority: quanta}`` for each enabled class of a PFC frame; None if not PFC.

    Recognised by EtherType 0x8808 and opcode 0x0101 (the destination MAC is not checked,
    as a NIC's MAC-control filter does not need it for frames addressed to it).

    >>> parse_pause(build_pause("02:00:00:00:00:01", {3: 7, 6: 0}))
    {3: 7, 6: 0}
    >>> parse_pause(b"\\x00" * 60) is None
    True
    """
    if len(frame) < 14 + 20:
        return None
    etype, opcode, vector, *times = _PFC.unpack_from(frame, 12)
    if etype != ETHERTYPE_PFC or opcode != PFC_OPCODE:
        return None
    return {p: times[p] for p in range(NUM_PRIORITIES) if vector & (1 << p)}


def build_pause(src_mac: str, quanta: Mapping[int, int]) -> bytes:
    """A 60-byte PFC frame enabling the given priorities (quanta 0 = RESUME).

    >>> len(build_pause("02:00:00:00:00:01", {3: 65535}))
    60
    """
    times = [0] * NUM_PRIORITIES
    vector = 0
    for prio, q in quanta.items():
        if not 0 <= prio < NUM_PRIORITIES or not 0 <= q <= 0xFFFF:
            raise ValueError(f"bad PFC entry priority {prio} quanta {q}")
        times[prio] = q
        vector |= 1 << prio
    src = bytes.fromhex(src_mac.replace(":", ""))
    body = PFC_DST_MAC + src + _PFC.pack(ETHERTYPE_PFC, PFC_OPCODE, vector, *times)
    return body + b"\x00" * (PFC_FRAME_LEN - len(body))


def pause_seconds(quanta: int, line_rate_bps: float) -> float:
    """Duration of ``quanta`` pause quanta at ``line_rate_bps``.

    >>> round(pause_seconds(65535, 400e9) * 1e6, 1)
    83.9
    """
    return quanta * QUANTUM_BITS / line_rate_bps


@dataclass(slots=True)
class PfcState:
    """Per-priority pause deadlines of one NIC port (times in seconds, injected).

    ``pauses[p]`` counts PAUSE frames with non-zero quanta, ``resumes[p]`` those with zero;
    :meth:`paused_seconds` integrates the time each priority spent paused.

    >>> st = PfcState(line_rate_bps=1e6)
    >>> st.on_pause({3: 100}, now=0.0); st.pause_remaining(3, 0.0)
    0.0512
    >>> st.on_pause({3: 0}, now=0.01); st.is_paused(3, 0.01)
    False
    """

    line_rate_bps: float
    paused_until: list[float] = field(default_factory=lambda: [0.0] * NUM_PRIORITIES)
    pauses: list[int] = field(default_factory=lambda: [0] * NUM_PRIORITIES)
    resumes: list[int] = field(default_factory=lambda: [0] * NUM_PRIORITIES)
    _since: list[Optional[float]] = field(default_factory=lambda: [None] * NUM_PRIORITIES)
    _paused_total: list[float] = field(default_factory=lambda: [0.0] * NUM_PRIORITIES)

    def __post_init__(self) -> None:
        if self.line_rate_bps <= 0:
            raise ValueError("line_rate_bps must be positive")

    def on_frame(self, frame: bytes, now: float) -> list[int]:
        """Apply a frame if it is PFC; returns the priorities it addressed (empty if not)."""
        entries = parse_pause(frame)
        if entries is None:
            return []
        self.on_pause(entries, now)
        return sorted(entries)

    def on_pause(self, entries: Mapping[int, int], now: float) -> None:
        """Apply ``{priority: quanta}`` received at ``now``."""
        for prio, quanta in entries.items():
            self._close(prio, now)
            if quanta == 0:
                self.resumes[prio] += 1
                self.paused_until[prio] = now
            else:
                self.pauses[prio] += 1
                self.paused_until[prio] = now + pause_seconds(quanta, self.line_rate_bps)
                self._since[prio] = now

    def is_paused(self, prio: int, now: float) -> bool:
        """True while ``prio`` must not transmit."""
        return now < self.paused_until[prio]

    def pause_remaining(self, prio: int, now: float) -> float:
        """Seconds until ``prio`` may transmit again (0 when it may now)."""
        return max(0.0, self.paused_until[prio] - now)

    def paused_seconds(self, prio: int, now: float) -> float:
        """Total time ``prio`` has been paused up to ``now``."""
        total = self._paused_total[prio]
        since = self._since[prio]
        if since is not None:
            total += max(0.0, min(now, self.paused_until[prio]) - since)
        return total

    def _close(self, prio: int, now: float) -> None:
        since = self._since[prio]
        if since is not None:
            self._paused_total[prio] += max(0.0, min(now, self.paused_until[prio]) - since)
            self._since[prio] = None
