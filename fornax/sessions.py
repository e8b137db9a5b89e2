"""What the FORNAX manager keeps per session: the minimum.

The hardware entry holds everything about a session (verdict, next hops, translation,
version, check code, counters, TCP state); the manager keeps, per session, its key (16
bytes) and one integer: the TCP-state slot and the last TCP state the NIC reported. Per
slot it keeps one byte, the slot's generation. The rest is restored on
demand: from the policy (:meth:`fornax.policy.Policy.evaluate`) and from the entry itself
(a P4Runtime Read), see :meth:`fornax.manager.FornaxManager.session_detail`.

Example::

    >>> store = SessionStore(capacity=4)
    >>> key = SessionKey(100, 6, 1, 2, 40000, 80)
    >>> slot, gen = store.add(key)
    >>> (slot, gen, store.slot(key), len(store))
    (0, 1, 0, 1)
    >>> store.remove(key)
    0
    >>> store.add(SessionKey(100, 6, 1, 2, 40001, 80))
    (0, 2)
"""
from __future__ import annotations

from array import array
from typing import Iterator, Optional

from p4src.smartnic.model import SessionKey

_SLOT_MASK = (1 << 24) - 1
_STATE_SHIFT = 24


class TableFullError(RuntimeError):
    """No free TCP-state slot (the session table is full)."""


class SessionStore:
    """Sessions by packed key -> one int (slot | state << 24), a free-slot
    stack and a generation byte per slot. ``capacity``: the session table's size."""

    def __init__(self, capacity: int) -> None:
        if capacity > _SLOT_MASK + 1:
            raise ValueError(f"capacity {capacity} exceeds {_SLOT_MASK + 1}")
        self.capacity = capacity
        self._by_key: dict[bytes, int] = {}
        self._free = array("I", range(capacity - 1, -1, -1))
        self._gens = bytearray(capacity)

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, key: SessionKey) -> bool:
        return key.packed() in self._by_key

    def add(self, key: SessionKey) -> tuple[int, int]:
        """Take a slot for ``key``; (slot, generation). TableFullError when none is free."""
        if not self._free:
            raise TableFullError(f"all {self.capacity} slots are taken")
        slot = self._free.pop()
        gen = (self._gens[slot] % 255) + 1          # 1..255: never 0, the reset value
        self._gens[slot] = gen
        self._by_key[key.packed()] = slot
        return slot, gen

    def remove(self, key: SessionKey) -> Optional[int]:
        """Forget ``key`` and free its slot; the slot (None when unknown)."""
        value = self._by_key.pop(key.packed(), None)
        if value is None:
            return None
        slot = value & _SLOT_MASK
        self._free.append(slot)
        return slot

    def slot(self, key: SessionKey) -> Optional[int]:
        """The slot of ``key`` (None when unknown)."""
        value = self._by_key.get(key.packed())
        return None if value is None else value & _SLOT_MASK

    def gen(self, slot: int) -> int:
        """The generation of ``slot``."""
        return self._gens[slot]

    def set_state(self, key: SessionKey, state: int) -> bool:
        """Record the TCP state the NIC reported; False for an unknown key."""
        k = key.packed()
        value = self._by_key.get(k)
        if value is None:
            return False
        self._by_key[k] = (value & ~(0xF << _STATE_SHIFT)) | ((state & 0xF) << _STATE_SHIFT)
        return True

    def state(self, key: SessionKey) -> Optional[int]:
        """The last TCP state reported for ``key``."""
        value = self._by_key.get(key.packed())
        return None if value is None else (value >> _STATE_SHIFT) & 0xF

    def keys(self) -> Iterator[SessionKey]:
        """Every session's key (for a status or a restore, not for any periodic work)."""
        return (SessionKey.unpack(k) for k in list(self._by_key))

    @property
    def free_slots(self) -> int:
        """Slots not taken."""
        return len(self._free)


__all__ = ["SessionStore", "TableFullError"]
