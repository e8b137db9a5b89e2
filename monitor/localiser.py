"""The fault localiser: from one :class:`~monitor.evidence.Evidence` per evaluation it
names the faulty component — a link direction, a cable, a switch, a route, a NIC, a port,
an agent, the controller — with the evidence in words and a confidence, and says when a
fault it named is over.

How it decides (the rules: :mod:`monitor.rules`, :mod:`monitor.linkrules`; thresholds
and the view of the probe paths: :mod:`monitor.pathview`):

1. **Most specific first.** Each evaluation runs the rules in this order, and a rule
   that explains probe paths takes them away from the rules after it: the controller,
   a hung switch (it explains every path through it, from the first evaluation its
   P4Runtime is silent), a slow receiver (the paths to it, and those over links its
   pause storm reaches), a flapping cable, a dead ToR (a leaf that forwards nothing while
   its P4Runtime answers), a dead NIC port (one port's cable passes nothing either way),
   a blackholed route, corruption, a gray link; then wrong ECN thresholds and dead agents (not while the controller is down
   or just back: it explains silent agents).
2. **Persistence.** A rule's candidate is named only when present in
   ``min_evals`` evaluations in a row (one miss forgiven, ``grace_evals``) and for its
   hold time (2 s for most; 8 s for a link that is dead or bad both ways, so that a flap
   is named a flap, not a dead link); one noisy window names nothing.
3. **Noise.** Loss thresholds rise with the median path's loss (a loaded CPU costs every
   path a few %), a link is blamed only when *all* its measured paths are bad, and
   paths with fewer than ``min_path_probes`` probes are not judged.
4. **Clearing.** A named fault whose candidate is absent for ``clear_s`` is over:
   :meth:`Localiser.cleared` lists it once (the log's ``cleared`` line).

Each verdict's evidence ends with how long it was held. Deterministic: the same
evidence sequence gives the same verdicts (rules iterate in sorted order).

Example (the controller silent for three evaluations)::

    >>> loc = Localiser()
    >>> [v.component for t in (0.0, 1.0, 2.0) for v in loc.observe(Evidence(t, controller_up=False))]
    ['controller']
    >>> [v.kind for v in loc.active()]
    ['controller_down']
    >>> _ = [loc.observe(Evidence(t, controller_up=True)) for t in (3.0, 4.0, 5.0, 7.5)]
    >>> [v.kind for v in loc.cleared()], loc.active()
    (['controller_down'], [])
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from prometheus_client import Counter, Gauge

from monitor.evidence import FAULT_KINDS, Evidence, Verdict
from monitor.linkrules import (CableHistory, blackhole_rule, corruption_rule, explain_route_tails,
                               flapping_rule,
                               gray_link_rule)
from monitor.pathview import Candidate, LocaliserConfig, PathView
from monitor.rules import (SwitchLossMemory, controller_rule, dead_agent_rule, dead_nic_port_rule,
                           dead_tor_rule, hung_switch_rule, slow_receiver_rule, wrong_ecn_rule)


@dataclass(slots=True)
class _Streak:
    """One candidate's presence: first and last seen, evaluations present, misses in a
    row, the latest candidate, and its verdict once named."""

    first_t: float
    last_t: float
    evals: int
    misses: int
    latest: Candidate
    verdict: Optional[Verdict] = None


class Localiser:
    """Stateful across evaluations: :meth:`observe` one evidence snapshot at a time.

    ``log`` (a :class:`VerdictLog`) gets a line per verdict named or cleared;
    ``registry`` (a ``prometheus_client.CollectorRegistry``) gets
    ``monitor_verdicts_total{kind}`` and ``monitor_active_faults{kind,component}``.
    """

    def __init__(self, config: Optional[LocaliserConfig] = None, *,
                 log: Optional["VerdictLog"] = None, registry: Any = None) -> None:
        self.config = config or LocaliserConfig()
        self._streaks: dict[tuple[str, str], _Streak] = {}
        self._cleared: list[Verdict] = []
        self._history = CableHistory(self.config.flap_window_s, self.config.flap_up_frac)
        self._controller_down_t: Optional[float] = None   # when GOR was last seen down
        self._last_t: Optional[float] = None
        self._switch_loss = SwitchLossMemory(self.config.hung_memory_s)
        self._log = log
        self._metrics = VerdictMetrics(registry) if registry is not None else None

    # ------------------------------------------------------------------ public API
    def observe(self, evidence: Evidence) -> list[Verdict]:
        """Feed one evaluation; return the verdicts named *now* (each fault once, until it
        clears). Evidence must come in time order."""
        if self._last_t is not None and evidence.t_s < self._last_t:
            raise ValueError(f"localiser: evidence at t={evidence.t_s} s comes after "
                             f"t={self._last_t} s (evidence must come in time order)")
        self._last_t = evidence.t_s
        candidates = self._candidates(evidence)
        named = self._track(candidates, evidence.t_s)
        if self._log is not None:
            self._log.write(named, self._cleared, evidence.t_s)
        if self._metrics is not None:
            self._metrics.update(named, self._cleared)
        return named

    def active(self) -> list[Verdict]:
        """The faults named and not cleared, in the order they were named."""
        out = [s.verdict for s in self._streaks.values() if s.verdict is not None]
        return sorted(out, key=lambda v: (v.t_s, FAULT_KINDS.index(v.kind), v.component))

    def cleared(self) -> list[Verdict]:
        """The verdicts whose fault ended at the last :meth:`observe` (their evidence was
        gone for ``clear_s``)."""
        return list(self._cleared)

    # ------------------------------------------------------------------ internals
    def _candidates(self, ev: Evidence) -> list[Candidate]:
        """What the rules see in one snapshot, most specific first (updates the flap
        history and the controller's state)."""
        cfg = self.config
        if ev.controller_up is False:
            self._controller_down_t = ev.t_s
        settled = (self._controller_down_t is None
                   or ev.t_s - self._controller_down_t >= cfg.agent_grace_s)
        view = PathView.of(ev, cfg)
        out = controller_rule(ev, cfg)
        self._switch_loss.update(ev, view, ev.t_s)
        out += hung_switch_rule(ev, view, cfg, self._switch_loss)
        out += slow_receiver_rule(ev, view, cfg, self._established)
        flaps, cables_down = flapping_rule(ev, view, cfg, self._history)
        out += flaps
        out += dead_tor_rule(ev, view, cfg)
        out += dead_nic_port_rule(ev, view, cfg)
        out += blackhole_rule(ev, view, cfg, cables_down)
        blackholes = [c for (k, c), st in self._streaks.items()
                      if k == "blackhole" and st.verdict is not None]
        explain_route_tails(view, cfg, blackholes)
        corrupt, corrupting = corruption_rule(ev, view, cfg)
        out += corrupt
        named_gray = frozenset(c for (k, c), s in self._streaks.items()
                               if k == "gray_link" and s.verdict is not None)
        out += gray_link_rule(ev, view, cfg, corrupting, named_gray)
        out += wrong_ecn_rule(ev, cfg)
        out += dead_agent_rule(ev, view, cfg, settled)
        return out

    def _established(self, kind: str, comp: str) -> bool:
        """Whether a candidate was present in the last two evaluations (or is named):
        only then does it explain other evidence away."""
        s = self._streaks.get((kind, comp))
        return s is not None and (s.verdict is not None or (s.evals >= 2 and s.misses == 0))

    def _track(self, candidates: list[Candidate], t_s: float) -> list[Verdict]:
        cfg = self.config
        self._cleared = []
        seen: set[tuple[str, str]] = set()
        named: list[Verdict] = []
        for c in candidates:
            key = (c.kind, c.component)
            if key in seen:
                continue
            seen.add(key)
            s = self._streaks.get(key)
            if s is None:
                s = self._streaks[key] = _Streak(t_s, t_s, 0, 0, c)
            s.evals, s.misses, s.last_t, s.latest = s.evals + 1, 0, t_s, c
            if (s.verdict is None and s.evals >= max(c.hold_evals, cfg.min_evals)
                    and t_s - s.first_t >= c.hold_s - 1e-9):
                held = f"held {t_s - s.first_t:.1f} s over {s.evals} evaluations"
                s.verdict = Verdict(c.kind, c.component, c.confidence, c.evidence + (held,), t_s)
                named.append(s.verdict)
        for key in sorted(set(self._streaks) - seen):
            s = self._streaks[key]
            s.misses += 1
            if s.verdict is None:
                if s.misses > cfg.grace_evals:
                    del self._streaks[key]
            elif t_s - s.last_t >= cfg.clear_s and s.misses >= cfg.min_evals:
                self._cleared.append(s.verdict)
                del self._streaks[key]
        return sorted(named, key=lambda v: (FAULT_KINDS.index(v.kind), v.component))


class VerdictLog:
    """The verdict log: JSON lines, one per verdict named (``"event": "named"``) and one
    when it clears (``"event": "cleared"``, with ``cleared_t_s``); each line is
    :meth:`Verdict.to_dict` plus the event. Each evaluation with lines appends them and
    closes the file (a reader never sees half a line).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "verdicts.jsonl")
    >>> log = VerdictLog(path)
    >>> v = Verdict("controller_down", "controller", 0.9, ("silent",), 2.0)
    >>> log.write([v], [], 2.0); log.write([], [v], 9.0)
    >>> [json.loads(l)["event"] for l in open(path)]
    ['named', 'cleared']
    """

    def __init__(self, path: Union[str, Path]) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.touch()
        except OSError as e:
            raise ValueError(f"verdict log {self.path}: cannot write: {e.strerror}") from None

    def write(self, named: list[Verdict], cleared: list[Verdict], t_s: float) -> None:
        """Append the lines of one evaluation (nothing when both lists are empty)."""
        lines = [dict(v.to_dict(), event="named") for v in named]
        lines += [dict(v.to_dict(), event="cleared", cleared_t_s=t_s) for v in cleared]
        if not lines:
            return
        with self.path.open("a", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line, sort_keys=True) + "\n")

    @staticmethod
    def read(path: Union[str, Path]) -> list[dict[str, Any]]:
        """The log's lines as dicts (for reports and tests)."""
        return [json.loads(l) for l in Path(path).read_text(encoding="utf-8").splitlines() if l]


class VerdictMetrics:
    """``monitor_verdicts_total{kind}`` (counter: verdicts named) and
    ``monitor_active_faults{kind,component}`` (gauge: 1 while named, 0 once cleared) on
    a ``prometheus_client`` registry.

    >>> from prometheus_client import CollectorRegistry
    >>> reg = CollectorRegistry()
    >>> m = VerdictMetrics(reg)
    >>> m.update([Verdict("controller_down", "controller", 0.9, (), 2.0)], [])
    >>> reg.get_sample_value("monitor_verdicts_total", {"kind": "controller_down"})
    1.0
    """

    def __init__(self, registry: Any) -> None:
        self.verdicts = Counter("monitor_verdicts", "Verdicts the localiser named, by fault kind",
                                ["kind"], registry=registry)
        self.active = Gauge("monitor_active_faults",
                            "1 while the localiser holds a fault on the component, 0 once cleared",
                            ["kind", "component"], registry=registry)

    def update(self, named: list[Verdict], cleared: list[Verdict]) -> None:
        """Count the verdicts named and set the gauges of named and cleared faults."""
        for v in named:
            self.verdicts.labels(kind=v.kind).inc()
            self.active.labels(kind=v.kind, component=v.component).set(1)
        for v in cleared:
            self.active.labels(kind=v.kind, component=v.component).set(0)


__all__ = ["Localiser", "LocaliserConfig", "VerdictLog", "VerdictMetrics"]
