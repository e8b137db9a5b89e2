"""The order and priorities of a table's initial entries (``entries``/``const entries``),
as p4c-bm2-ss and BMv2 give them.

p4c's front end (``frontends/p4/entryPriorities.cpp``) computes the ``priority = N`` of
each entry: an entry without one takes the previous one's minus ``priority_delta``
(plus, with ``largest_priority_wins = false``), and when the list is *out of order*
(a priority larger than the previous one's with ``largest_priority_wins = true``, a
smaller one with ``false``) it sorts the entries, largest first (smallest first with
``false``). The BMv2 back end (``backends/bmv2/common/control.h``,
``convertTableEntries``) then ignores those numbers: it writes each entry's BMv2
priority as its 1-based position in that list (or its ``@priority(N)`` annotation), and
in BMv2 the smallest priority wins. So in BMv2 the first entry of p4c's order wins, and
``largest_priority_wins`` only decides that order.

p4sim's tables keep P4Runtime priorities (the largest wins). BMv2's P4Runtime server
converts between the two with PI's ``PriorityInverter`` (PI/src/pi_tables_imp.cpp):
``p4runtime = 2^31 - 1 - bmv2``. An initial entry gets that priority, so it reads back
as on BMv2 (the first entry ``2147483646``) and beats every entry the control plane adds
with a usual priority, as on BMv2.

Example::

    >>> p4c_entry_order([10, 30, 20, 19], largest_wins=True)   # out of order: sorted
    [1, 2, 3, 0]
    >>> p4c_entry_order([5, 6, 7], largest_wins=False)         # in order: kept
    [0, 1, 2]
    >>> p4runtime_priority(1)
    2147483646
"""
from __future__ import annotations

from typing import Optional, Sequence

BM_MAX_PRIORITY = (1 << 31) - 1   # PI's pivot: the largest int


def out_of_order(priorities: Sequence[int], largest_wins: bool) -> bool:
    """Whether p4c finds the written priorities out of order (and sorts the entries).

    >>> out_of_order([3, 2, 2, 1], True), out_of_order([1, 3, 2], False)
    (False, True)
    """
    pairs = zip(priorities, priorities[1:])
    return any(b > a if largest_wins else b < a for a, b in pairs)


def p4c_entry_order(priorities: Optional[Sequence[int]], largest_wins: bool, count: int = 0) -> list[int]:
    """The indices of the entries in the order p4c leaves them: as written, unless the
    priorities are out of order; then sorted by priority, largest first (smallest first
    when ``largest_wins`` is false). p4c's ``std::sort`` is not stable; equal
    priorities keep their written order here. ``None``: no priorities written.

    >>> p4c_entry_order([1, 5, 5, 3], largest_wins=False), p4c_entry_order(None, True, 2)
    ([0, 3, 1, 2], [0, 1])
    """
    if priorities is None:
        return list(range(count))
    order = list(range(len(priorities)))
    if out_of_order(priorities, largest_wins):
        order.sort(key=lambda i: -priorities[i] if largest_wins else priorities[i])
    return order


def p4runtime_priority(bmv2_priority: int) -> int:
    """The P4Runtime priority BMv2's server reports for a BMv2 priority (smaller wins)."""
    return BM_MAX_PRIORITY - bmv2_priority
