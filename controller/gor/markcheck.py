"""Marks the queue cannot explain: GOR starts no decision round on them.

A port configured as the fabric's plan says marks CE only when a packet leaving it saw at
least ``kmin_pkts`` packets queued (``p4src/include/control/ecn.p4``: step marking at
``enq_qdepth >= kmin``, RED from ``kmin`` up). The same egress pipeline counts every
packet it sends in the queue-depth histogram (``FabricEgress.telemetry.qdepth_hist``, the
same ``enq_qdepth``, bins of :data:`~controller.telemetry.counters.QDEPTH_BIN_PKTS`
packets). So marks in an interval whose histogram shows no packet that could have seen
``kmin`` (the highest bin that grew ends below it) do not come from congestion: a port
whose threshold was written wrong (``wrong_ecn_threshold`` of the faults scenario: the
monitor names it from the same two counters, ``monitor/rules.py``), or counters of a
switch whose reads were stale. Moving flows away from such a port would not shorten any
queue: it would only move traffic (and the monitor's evidence) for nothing.

:func:`marks_unexplained` is the rule on one interval (a counter sample) and one switch
report (``alarm_digest_t`` carries the window's exact ``max_qdepth``);
:func:`planned_kmin` reads the threshold each port *should* have from the controller's
plan (``FabricProgrammer.plans``: what it wrote, not what the switch holds now). A port in
dynamic mode (``set_ecn_dynamic``: the threshold follows the free buffer) or one the plan
does not know has no fixed ``kmin``: its marks are always taken as they are, as are marks
of an interval without a histogram (an older pipeline).

>>> marks_unexplained(40, (70,), 8)          # every packet saw 0-3 queued: kmin 8 cannot mark
True
>>> marks_unexplained(40, (30, 20, 5), 8)    # some saw 8-11: explained
False
>>> marks_unexplained(40, (), 8), marks_unexplained(40, (70,), None), marks_unexplained(0, (70,), 8)
(False, False, False)
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from controller.fabric.entries import T_ECN
from controller.gor.decisions import LinkKey
from controller.telemetry.counters import QDEPTH_BIN_PKTS

FIXED_ECN_ACTIONS = ("FabricEgress.ecn.set_ecn_threshold", "FabricEgress.ecn.set_ecn_red")
"""The ECN actions with a fixed ``kmin_pkts`` (``set_ecn_dynamic`` has none)."""


def marks_unexplained(marks: int, qdepth_bins: Sequence[int], kmin_pkts: Optional[int],
                      max_qdepth: Optional[int] = None) -> bool:
    """Whether ``marks`` CE marks of one interval are more than a port with threshold
    ``kmin_pkts`` could have made: the deepest queue its packets saw stays below
    ``kmin_pkts``. The deepest queue is ``max_qdepth`` when given exactly (a switch's
    alarm report), else the upper edge of the highest non-empty bin of ``qdepth_bins``
    (the interval's histogram). False when any of them is unknown.

    >>> marks_unexplained(3, (), 8, max_qdepth=2), marks_unexplained(3, (), 8, max_qdepth=8)
    (True, False)
    """
    if marks <= 0 or kmin_pkts is None or kmin_pkts <= 0:
        return False
    if max_qdepth is not None:
        return max_qdepth < kmin_pkts
    top = max((b for b, n in enumerate(qdepth_bins) if n > 0), default=None)
    if top is None:
        return False
    return top * QDEPTH_BIN_PKTS + QDEPTH_BIN_PKTS - 1 < kmin_pkts


def planned_kmin(plans: Mapping[str, Any]) -> dict[LinkKey, int]:
    """(switch, egress port) → the ``kmin_pkts`` the plan wrote there, for the ports with
    a fixed threshold (``plans``: switch → ``SwitchPlan``-like with ``entries``).

    >>> from controller.fabric.qos import EcnConfig, ecn_entry
    >>> from types import SimpleNamespace as S
    >>> planned_kmin({"s0": S(entries=[ecn_entry(3, EcnConfig())])})
    {('s0', 3): 8}
    """
    out: dict[LinkKey, int] = {}
    for sw, plan in plans.items():
        for e in getattr(plan, "entries", ()):
            if e.table != T_ECN or e.action not in FIXED_ECN_ACTIONS or getattr(e, "default", False):
                continue
            port = e.match.get("standard_metadata.egress_port")
            if isinstance(port, int) and "kmin_pkts" in e.params:
                out[(sw, port)] = int(e.params["kmin_pkts"])
    return out


class MarkCheck:
    """The planned thresholds of a programmer's switches, re-read when its plans change
    (``apply_thresholds`` replaces a switch's plan), and the ports whose marks are
    unexplained now (:attr:`unexplained`, for the decision log's episodes).

    >>> from controller.fabric.qos import EcnConfig, ecn_entry
    >>> from types import SimpleNamespace as S
    >>> mc = MarkCheck(S(plans={"s0": S(entries=[ecn_entry(3, EcnConfig())])}))
    >>> mc.kmin(("s0", 3)), mc.check(("s0", 3), 40, (70,)), mc.check(("s0", 4), 40, (70,))
    (8, True, False)
    """

    def __init__(self, programmer: Any) -> None:
        self.programmer = programmer
        self._seen: dict[str, Any] = {}             # switch → the plan its thresholds came from
        self._kmin: dict[LinkKey, int] = {}
        self.unexplained: set[LinkKey] = set()

    def kmin(self, link: LinkKey) -> Optional[int]:
        """The planned ``kmin_pkts`` of ``link``'s egress port (None: dynamic or unknown)."""
        plans = getattr(self.programmer, "plans", None)
        if not isinstance(plans, Mapping):
            return None
        plan = plans.get(link[0])
        if plan is None:
            return None
        if self._seen.get(link[0]) is not plan:
            self._seen[link[0]] = plan
            self._kmin = {k: v for k, v in self._kmin.items() if k[0] != link[0]}
            self._kmin.update(planned_kmin({link[0]: plan}))
        return self._kmin.get(link)

    def check(self, link: LinkKey, marks: int, qdepth_bins: Sequence[int],
              max_qdepth: Optional[int] = None) -> bool:
        """:func:`marks_unexplained` with ``link``'s planned threshold; True when the marks
        are unexplained (the caller ignores them)."""
        return marks_unexplained(marks, qdepth_bins, self.kmin(link), max_qdepth)


__all__ = ["FIXED_ECN_ACTIONS", "MarkCheck", "marks_unexplained", "planned_kmin"]
