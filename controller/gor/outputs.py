"""Where GOR's loop and its collaborators report: the decision log, the metrics and the
list of recent errors.

Every part of :class:`controller.gor.loop.GorLoop` (orders, rounds, faults, …) gets this
one small object instead of reaching into the loop for them. Swapping the decision log
(``loop.decision_log = None``: a scenario that stops logging) changes it for every part
at once.

>>> out = LoopOutputs()
>>> out.error("b0r0l0: sampling on port 3 not enabled: TimeoutError: ")
>>> out.errors
['b0r0l0: sampling on port 3 not enabled: TimeoutError: ']
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Optional

from controller.gor.log import DecisionLog
from controller.gor.metrics import GorMetrics

log = logging.getLogger("controller.gor.loop")

MAX_ERRORS = 100
"""The newest errors kept in :attr:`LoopOutputs.errors`."""


@dataclass(slots=True)
class LoopOutputs:
    """The decision log and metrics (each optional) and the newest :data:`MAX_ERRORS`
    errors (each also logged as a warning).

    >>> LoopOutputs().decision_log is None
    True
    """

    decision_log: Optional[DecisionLog] = None
    metrics: Optional[GorMetrics] = None
    errors: list[str] = field(default_factory=list)

    def error(self, msg: str) -> None:
        """A fault the loop survives (a switch or agent that does not answer, bad input):
        logged as a warning and kept in :attr:`errors`."""
        log.warning("%s", msg)
        self.errors.append(msg)
        del self.errors[:-MAX_ERRORS]


__all__ = ["LoopOutputs", "MAX_ERRORS"]
