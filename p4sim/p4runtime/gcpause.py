"""Python's cyclic garbage collector paused while a Write batch is applied.

A batch of table INSERTs makes several container objects an entry (the entry, its key
tuples, its lookup result), and CPython's collector runs a young-generation pass every
700 allocations and an older pass every tenth of those, each walking objects that are all
still alive. Measured in-process on port_fwd.p4's dmac, one Write of 4,096 INSERTs
(p4sim/README.md, "P4Runtime write path"): 13-14 µs an entry with the collector on,
8 µs with it paused. The batch makes no garbage cycles (an undo closure refers to its
entry, not to itself), so nothing waits longer to be freed; reference counting frees
everything else as always. The collector runs again at the next allocations after the
batch.

:func:`gc_paused` nests and may be entered by several threads at once: the collector is
enabled again when the last holder leaves, and only if it was enabled when the first came.
A pause is bounded: while Writes overlap with no gap the last holder never leaves, so
once a pause has lasted :data:`MAX_PAUSE_S` the next holder that comes or goes turns the
collector back on, and it stays on until it has run a pass (its due young pass comes at
the next allocations: the count went on while it was off); the holder after that pauses
it again, for at most :data:`MAX_PAUSE_S` more. Before, a switch written without a gap
(several clients, or one client pipelining Writes) never collected a cycle again.

:func:`freeze_long_lived` is the other half, for a switch process: after a pipeline is
committed it collects once, then moves every object left (modules, gRPC, the program and
its tables) to the collector's permanent generation (``gc.freeze``), which its passes do
not walk. A full pass then walks the table entries and little else: measured on the
batched write probe, ~1.2 µs an update of full passes before, ~0.6 after. The next commit
unfreezes first, so the old pipeline is collected.

:func:`switch_thresholds` is the third, for a switch process too: the young generation's
threshold goes from CPython's 700 to :data:`SWITCH_GC_THRESHOLD0` (20,000) net
allocations of tracked objects. A table INSERT leaves ~3 (its entry, key tuples and
result), so at 700 a Write of 100 INSERTs set off a young pass after every batch, each
walking that batch's entries (all alive) and promoting them to the older generations
whose passes walk them again: in-process, requests of 100 INSERTs then of 100 DELETEs
(issue 36, tenth pass, bench/README.md), 46-57 µs of the collector's CPU a request, about a
tenth of the handler's time (1,522 young, 139 middle and 14 full passes for 4,800
requests; at 20,000: one of each). At
20,000 a pass walks as many objects per entry when entries only accumulate (the same
work, in fewer and longer passes: ~1-3 ms every ~6,000 INSERTs), and none that a
DELETE freed before it came. Cyclic garbage waits for at most 20,000 more allocations
(a few MB) before it is collected.

Example::

    >>> import gc
    >>> with gc_paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
"""
from __future__ import annotations

import gc
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

MAX_PAUSE_S = 1.0
"""The longest pause while holders overlap (a Write of 4,096 INSERTs takes ~35 ms): then
the collector is on again until it has run a pass (see the module docstring)."""

_lock = threading.Lock()
_holders = 0
_was_enabled = False
_clock: Callable[[], float] = time.monotonic
_paused_at = 0.0
_resumed_at: Optional[int] = None
"""Collections counted when the collector was turned back on within an overlap; None
while it is paused."""


def _collections() -> int:
    """Passes the collector has run, every generation together."""
    return sum(s["collections"] for s in gc.get_stats())


def _bound_pause() -> None:
    """Under ``_lock`` with holders in: the collector on again once the pause has lasted
    :data:`MAX_PAUSE_S`, off again once it has run a pass since."""
    global _paused_at, _resumed_at
    if not _was_enabled:
        return
    if _resumed_at is None:
        if _clock() - _paused_at >= MAX_PAUSE_S:
            _resumed_at = _collections()
            gc.enable()
    elif _collections() > _resumed_at:
        gc.disable()
        _paused_at, _resumed_at = _clock(), None


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector off for the ``with`` body, for at most :data:`MAX_PAUSE_S` at
    a stretch while bodies overlap (see the module docstring)."""
    global _holders, _was_enabled, _paused_at, _resumed_at
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
            _paused_at, _resumed_at = _clock(), None
        else:
            _bound_pause()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                _resumed_at = None
                if _was_enabled:
                    gc.enable()
            else:
                _bound_pause()


SWITCH_GC_THRESHOLD0 = 20_000
"""The young generation's threshold in a switch process (see the module docstring)."""


def switch_thresholds() -> None:
    """Set the collector's young-generation threshold to :data:`SWITCH_GC_THRESHOLD0`,
    the older generations' left as they are (see the module docstring).

    >>> import gc
    >>> old = gc.get_threshold(); switch_thresholds(); gc.get_threshold()[0]
    20000
    >>> gc.set_threshold(*old)
    """
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(SWITCH_GC_THRESHOLD0, older, oldest)


def freeze_long_lived() -> None:
    """Collect, then freeze what is left (see the module docstring); what an earlier call
    froze is unfrozen first, so it is collected if it has become garbage.

    >>> import gc
    >>> freeze_long_lived(); gc.get_freeze_count() > 0
    True
    >>> gc.unfreeze()
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()
