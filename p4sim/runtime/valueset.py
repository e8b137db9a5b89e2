"""Parser value sets (``value_set<T>(size) pvs;``): entries written by the control plane,
matched by ``select``.

Example::

    >>> vs = ValueSet("MyParser.pvs", 16, 4)
    >>> vs.set_members([(0x0800, 0xFFFF)])
    >>> vs.match(0x0800), vs.match(0x86DD)
    (True, False)
"""
from __future__ import annotations

from p4sim.runtime.errors import RuntimeStateError


class ValueSet:
    """Members are (value, mask) pairs; a key matches when ``key & mask == value & mask``."""

    def __init__(self, name: str, width: int, size: int) -> None:
        self.name = name
        self.width = width
        self.size = size
        self.members: list[tuple[int, int]] = []

    def set_members(self, members: list[tuple[int, int]]) -> None:
        if len(members) > self.size:
            raise RuntimeStateError("RESOURCE_EXHAUSTED", f"value set {self.name} holds at most {self.size} members")
        full = (1 << self.width) - 1
        for v, m in members:
            if v > full or m > full or v < 0 or m < 0:
                raise RuntimeStateError("OUT_OF_RANGE", f"value set {self.name}: member wider than {self.width} bits")
        self.members = list(members)

    def match(self, key: int) -> bool:
        return any((key & m) == (v & m) for v, m in self.members)
