"""Registers: v1model ``register<T>(size)`` arrays of ``width``-bit cells.

Data-plane access (:meth:`RegisterArray.read` / :meth:`RegisterArray.write`) follows the
P4_16 spec's v1model description for an index outside ``[0, size)``: a read returns 0 and
a write does nothing. (BMv2 itself does not bounds-check ``register_read`` /
``register_write``: out-of-range access is undefined behaviour there.) Values are masked
to the cell width. Control-plane access (:meth:`get` / :meth:`set`) raises
``OUT_OF_RANGE`` for a bad index or a value wider than the cell.

Example::

    >>> r = RegisterArray("MyIngress.r", 4, 8)
    >>> r.write(2, 0x1FF); r.read(2), r.read(99)
    (255, 0)
"""
from __future__ import annotations

from p4sim.runtime.errors import RuntimeStateError, check_fits


class RegisterArray:
    """``size`` cells of ``width`` bits, all zero initially."""

    def __init__(self, name: str, size: int, width: int) -> None:
        self.name = name
        self.size = size
        self.width = width
        self._mask = (1 << width) - 1
        self.signed = False           # an int<W> register (P4Info writes its type as int)
        self._cells = [0] * size

    def read(self, index: int) -> int:
        """Data-plane read: 0 when ``index`` is out of range."""
        if 0 <= index < self.size:
            return self._cells[index]
        return 0

    def write(self, index: int, value: int) -> None:
        """Data-plane write, masked to the width; no-op when ``index`` is out of range."""
        if 0 <= index < self.size:
            self._cells[index] = value & self._mask

    def _check(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise RuntimeStateError("OUT_OF_RANGE", f"register {self.name}: index {index} not in [0, {self.size})")

    def get(self, index: int) -> int:
        """Control-plane read."""
        self._check(index)
        return self._cells[index]

    def set(self, index: int, value: int) -> None:
        """Control-plane write: the value must fit the cell width."""
        self._check(index)
        check_fits(value, self.width, f"register {self.name}")
        self._cells[index] = value

    def values(self) -> list[int]:
        """A copy of all cells."""
        return list(self._cells)

    def reset(self) -> None:
        """All cells back to zero (in place: the native path shares the cells)."""
        self._cells[:] = [0] * self.size
