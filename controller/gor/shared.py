"""What the parts of GOR's loop share: the loop's settings (:class:`LoopSettings`), the
state several parts read and write (:class:`LoopState`, one typed bundle built once per
loop) and where they report (:class:`LoopOutputs`).

Every part of :class:`controller.gor.loop.GorLoop` (orders, rounds, faults, …) is given the
:class:`LoopState` and reads the few things it uses from it; state only one part uses is
that part's own (the dead-link and pause-storm monitors are ``LinkFaults``', the detours
``DetourSync``'s, the sampling entries ``Sampling``'s). Swapping the decision log
(``loop.decision_log = None``: a scenario that stops logging) changes it for every part
at once.

>>> LoopSettings(top_n=0)
Traceback (most recent call last):
...
ValueError: top_n, one_in_n and order_workers must be at least 1
>>> LoopSettings(window_s=1.0, period_s=0.05).move_settle_s
1.1
>>> out = LoopOutputs()
>>> out.error("b0r0l0: sampling on port 3 not enabled: TimeoutError: ")
>>> out.errors
['b0r0l0: sampling on port 3 not enabled: TimeoutError: ']
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from controller.fabric import switch_id_of
from controller.gor.alarms import AlarmMonitor, AlarmThresholds
from controller.gor.dataplane import DataplaneReports
from controller.gor.deadlinks import DeadLinkThresholds
from controller.gor.decisions import AlarmLevel
from controller.gor.elephants import FlowTable
from controller.gor.log import DecisionLog
from controller.gor.metrics import GorMetrics
from controller.gor.moves import MoveBook
from controller.gor.pause import PauseStormThresholds
from controller.gor.paths import LinkState, PathEngine, nic_leaves
from controller.gor.tables import SwitchTables
from controller.gor.windows import LoadWindows

log = logging.getLogger("controller.gor.loop")

MAX_ERRORS = 100
"""The newest errors kept in :attr:`LoopOutputs.errors`."""
DEFAULT_AGENT_SILENT_S = 3.0
"""A registered flow whose agent has not registered it for this long (agents register every
second: three missed periods) belongs to a sender that is gone: GOR orders it no move
(before, the story's GOR kept ordering moves to the senders' agents after the senders had
stopped, each one failing UNAVAILABLE; ux-walk)."""
DEFAULT_FLOW_ENDED_S = 0.3
"""A flow not sampled on its hot link for this long has ended (or left the link): GOR does
not move it, although the samples of the load window (``window_s``, 2 s in the story) still
rank it. On an alarmed uplink GOR samples about 350 packets a second
(``scenarios.gor_session.SAMPLES_PER_S``), ~90 a second of each of four elephants: 0.3 s
without one is some 25 missed. A live flow taken for ended by a switch stalled that long
waits for the next round. In a failed run of the ux-walk (fresh clone, load 8) the senders
ran 12.0 s and GOR's last two orders came 12.38 and 12.59 s after its first alarm, so at
least 0.38 s after they had ended."""
DEFAULT_OVERRIDE_IDLE_S = 10.0
"""An override whose flow has not been sampled for this long gets a liveness probe."""
DEFAULT_OVERRIDE_PROBE_S = 1.0
"""How long the liveness probe (sampling at the override's first link) waits for the flow."""


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """Every setting of GOR's loop, with its default (the rules are in
    :mod:`controller.gor.loop`): ``period_s`` the telemetry period; ``safety`` the
    threshold every link of a new path must stay under; ``top_n`` elephants per round;
    ``one_in_n`` the sampling ratio on alarmed ports; ``thresholds`` the alarm levels;
    ``window_s`` the load and sample window; ``decide_every_s``, ``decide_level``,
    ``min_samples``, ``samples_per_flow``, ``early_decide`` and ``proof_s`` when a link gets
    a round; ``cooldown_s`` how long a moved flow rests; ``confirm_timeout_s``,
    ``order_timeout_s``, ``max_retries``, ``settle_s`` and ``order_workers`` the orders;
    ``override_idle_s``/``override_probe_s`` override expiry; ``pause_thresholds``,
    ``dead_link_thresholds`` and ``detect_dead_links`` the fault detectors;
    ``agent_silent_s`` and ``flow_ended_s`` the flows no order goes to (their sender is gone:
    its agent has not registered them for that long, or they were not sampled on the hot
    link for that long).

    >>> LoopSettings(period_s=0.25, top_n=8).top_n
    8
    """

    period_s: float = 0.05
    safety: float = 0.75
    top_n: int = 4
    one_in_n: int = 100
    thresholds: Optional[AlarmThresholds] = None
    window_s: float = 1.0
    decide_every_s: float = 1.0
    cooldown_s: float = 10.0
    confirm_timeout_s: float = 3.0
    order_timeout_s: float = 2.0
    max_retries: int = 1
    decide_level: AlarmLevel = AlarmLevel.WARNING
    settle_s: Optional[float] = None
    min_samples: int = 20
    samples_per_flow: Optional[int] = None
    early_decide: bool = True
    proof_s: float = 0.5
    order_workers: int = 4
    override_idle_s: float = DEFAULT_OVERRIDE_IDLE_S
    override_probe_s: float = DEFAULT_OVERRIDE_PROBE_S
    pause_thresholds: Optional[PauseStormThresholds] = None
    dead_link_thresholds: Optional[DeadLinkThresholds] = None
    detect_dead_links: bool = True
    agent_silent_s: float = DEFAULT_AGENT_SILENT_S
    flow_ended_s: float = DEFAULT_FLOW_ENDED_S

    def __post_init__(self) -> None:
        if self.top_n < 1 or self.one_in_n < 1 or self.order_workers < 1:
            raise ValueError("top_n, one_in_n and order_workers must be at least 1")

    @property
    def move_settle_s(self) -> float:
        """How long a confirmed move stays in flight: ``settle_s``, by default ``window_s``
        plus two periods (the next round's windowed loads then hold nothing from before it)."""
        return self.window_s + 2 * self.period_s if self.settle_s is None else self.settle_s


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


@dataclass(frozen=True, slots=True)
class LoopState:
    """The state GOR's parts share, one object each: the path ``engine`` and the
    ``links`` it plans on (capacities, loads, down cables), the ``alarms``, the ``flows``
    sampled, the load ``windows``, the switches' own reports (``dataplane``), the ``book``
    of moves (in flight, cooldowns, registry ids, overrides), the switch ``tables`` every
    write goes through, the ``out``\\ puts, the NIC → leaf map (``leaf_of``) and the flow
    ``registry`` (None: every flow gets override entries).

    >>> st = LoopState.for_fabric(fabric, programmer, None, LoopSettings())   # doctest: +SKIP
    >>> st.links.name(("b0r0l0", 3))                                          # doctest: +SKIP
    'b0r0l0->s0'
    """

    engine: PathEngine
    links: LinkState
    alarms: AlarmMonitor
    flows: FlowTable
    windows: LoadWindows
    dataplane: DataplaneReports
    book: MoveBook
    tables: SwitchTables
    out: LoopOutputs
    leaf_of: Mapping[str, str]
    registry: Any

    @classmethod
    def for_fabric(cls, fabric: Any, programmer: Any, registry: Any, settings: LoopSettings,
                   out: Optional[LoopOutputs] = None) -> "LoopState":
        """The state of a new loop over ``fabric`` (a ``topo.model.Fabric``), its switches
        reached through ``programmer`` (``connections``, ``hash_model()``)."""
        links = LinkState.from_fabric(fabric)
        switch_ids = {switch_id_of(sw, fabric): sw.name for sw in fabric.switches}
        return cls(engine=PathEngine(fabric, programmer.hash_model(), links, safety=settings.safety),
                   links=links, alarms=AlarmMonitor(settings.thresholds),
                   flows=FlowTable(switch_ids, one_in_n=settings.one_in_n, window_s=settings.window_s),
                   windows=LoadWindows(settings.window_s),
                   dataplane=DataplaneReports(switch_ids, frozenset(links.capacity_bps)),
                   book=MoveBook(), tables=SwitchTables(programmer), out=out or LoopOutputs(),
                   leaf_of=nic_leaves(fabric), registry=registry)


__all__ = ["DEFAULT_AGENT_SILENT_S", "DEFAULT_FLOW_ENDED_S", "DEFAULT_OVERRIDE_IDLE_S", "DEFAULT_OVERRIDE_PROBE_S", "LoopOutputs", "LoopSettings",
           "LoopState", "MAX_ERRORS"]
