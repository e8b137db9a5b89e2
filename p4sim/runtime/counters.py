"""Counters: indexed ``counter`` arrays and per-entry ``direct_counter`` cells.

BMv2 always counts both packets and bytes, whatever the declared unit; the unit only
says which numbers the control plane reports. Data-plane ``count(index)`` with an index
outside the array is ignored here (BMv2 does not bounds-check it: undefined behaviour
there). Control-plane reads and writes of a bad index raise ``OUT_OF_RANGE``.

Example::

    >>> c = CounterArray("MyIngress.pkts", 4, "packets_and_bytes")
    >>> c.count(1, 64); c.count(1, 100); c.count(9, 1)   # index 9: ignored
    >>> c.read(1)
    (2, 164)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from p4sim.runtime.errors import RuntimeStateError

COUNTER_UNITS = ("packets", "bytes", "packets_and_bytes")


def _check_unit(unit: str) -> str:
    if unit not in COUNTER_UNITS:
        raise ValueError(f"unknown counter unit {unit!r} (expected one of {COUNTER_UNITS})")
    return unit


@dataclass(slots=True)
class CounterCell:
    """One direct-counter cell (attached to a table entry).

    Example::

        >>> cell = CounterCell(); cell.count(60); (cell.packets, cell.bytes)
        (1, 60)
    """

    packets: int = 0
    bytes: int = 0

    def count(self, nbytes: int) -> None:
        self.packets += 1
        self.bytes += nbytes

    def read(self) -> tuple[int, int]:
        return (self.packets, self.bytes)

    def write(self, packets: int, nbytes: int) -> None:
        if packets < 0 or nbytes < 0:
            raise RuntimeStateError("INVALID_ARGUMENT", "counter values must be non-negative")
        self.packets, self.bytes = packets, nbytes

    def reset(self) -> None:
        self.packets = 0
        self.bytes = 0


class CounterArray:
    """v1model ``counter(size, type)``: ``size`` cells of (packets, bytes)."""

    def __init__(self, name: str, size: int, unit: str = "packets_and_bytes") -> None:
        self.name = name
        self.size = size
        self.unit = _check_unit(unit)
        self._packets = [0] * size
        self._bytes = [0] * size

    def count(self, index: int, nbytes: int) -> None:
        """Data-plane ``count(index)`` for a packet of ``nbytes``; bad index ignored."""
        if 0 <= index < self.size:
            self._packets[index] += 1
            self._bytes[index] += nbytes

    def _check(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise RuntimeStateError("OUT_OF_RANGE", f"counter {self.name}: index {index} not in [0, {self.size})")

    def read(self, index: int) -> tuple[int, int]:
        """``(packets, bytes)`` of one cell (control plane)."""
        self._check(index)
        return (self._packets[index], self._bytes[index])

    def columns(self) -> tuple[Sequence[int], Sequence[int]]:
        """The live (packets, bytes) columns, for reading every cell at once (a list, or
        the ctypes array the native path counts into); callers must not write them."""
        return self._packets, self._bytes

    def write(self, index: int, packets: int, nbytes: int) -> None:
        """Set one cell (control plane)."""
        self._check(index)
        if packets < 0 or nbytes < 0:
            raise RuntimeStateError("INVALID_ARGUMENT", "counter values must be non-negative")
        self._packets[index] = packets
        self._bytes[index] = nbytes

    def reset(self, index: int | None = None) -> None:
        """Zero one cell, or all of them when ``index`` is None."""
        if index is None:       # in place: the native path shares the cells
            self._packets[:] = [0] * self.size
            self._bytes[:] = [0] * self.size
            return
        self._check(index)
        self._packets[index] = 0
        self._bytes[index] = 0


class DirectCounter:
    """v1model ``direct_counter(type)``: the table gives each entry its own :class:`CounterCell`.

    BMv2 counts every hit of the owning table (the P4 ``count()`` call is a no-op);
    misses are not counted. :meth:`p4sim.runtime.tables.Table.apply` does the counting.
    """

    def __init__(self, name: str, unit: str = "packets_and_bytes") -> None:
        self.name = name
        self.unit = _check_unit(unit)

    def new_cell(self) -> CounterCell:
        return CounterCell()
