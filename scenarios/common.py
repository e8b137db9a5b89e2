"""What every scenario shares: its options (:class:`ScenarioOptions`), its result
(:class:`ScenarioResult`), where runs go (:data:`RUNS`) and the live per-uplink line.

The scenarios themselves and their registry: :mod:`scenarios.registry`. The queue rates
that make congestion on these machines (there is no netem): :mod:`testbed.queues`.

>>> ScenarioOptions().flows
8
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

from scenarios.telemetry import LinkId, LinkSample

RUNS = Path(__file__).resolve().parents[1] / "runs"


@dataclass(slots=True)
class ScenarioOptions:
    """Knobs of a scenario: ``flows`` elephants of ``flow_rate_pps`` on ``rail`` for
    ``duration_s``, telemetry (and GOR) every ``period_s``, every ``fast_period_s`` while
    GOR is busy (an alarm, a move in flight: ``GorLoop.busy``); ``queue_rate_pps`` None
    sizes the uplinks from the flows (:data:`scenarios.story.EVEN_UTIL`)."""

    seed: Optional[int] = None
    rail: int = 0
    flows: int = 8
    flow_rate_pps: float = 60.0
    duration_s: float = 12.0
    period_s: float = 0.25
    fast_period_s: float = 0.1
    queue_rate_pps: Optional[float] = None
    runs_root: Path = RUNS


@dataclass(slots=True)
class ScenarioResult:
    """What a run produced: exit status and run directory."""

    status: int
    run_dir: Optional[Path] = None


def live_line(uplinks: Sequence[str]) -> Callable[[float, dict[LinkId, LinkSample]], None]:
    """A printer of one line per interval: utilisation, pps, ECN marks, queue depth."""
    def tick(t_s: float, samples: dict[LinkId, LinkSample]) -> None:
        parts = [f"{l} {s.util_pct:5.1f}% {s.pps:6.0f} pps ecn {s.marks:4d} q {s.max_qdepth:3d}"
                 for l, s in sorted(samples.items(), key=lambda kv: str(kv[0]))
                 if str(l) in uplinks]
        print(f"  t={t_s:5.1f}s  " + " | ".join(parts), flush=True)
    return tick


__all__ = ["RUNS", "ScenarioOptions", "ScenarioResult", "live_line"]


Tick = tuple[float, dict[str, float], int]
"""(monotonic time of the poll, packets/s per uplink in the interval it ends, drops)."""


def time_mean(part: Sequence[Tick], uplinks: Sequence[str]) -> dict[str, float]:
    """Each uplink's mean packets/s over consecutive polls ``part``, each poll weighted by
    the time it covers (the gap since the one before; the first one by the median gap).
    Polls come at uneven intervals (a switch's alarm makes GOR poll early, a loaded machine
    delays a poll), and a plain mean of per-poll rates then over-weights the short ones.

    >>> time_mean([(0.0, {"u": 100.0}, 0), (0.1, {"u": 400.0}, 0), (0.4, {"u": 200.0}, 0)], ["u"])
    {'u': 185.7}
    """
    if not part:
        return {}
    gaps = [b[0] - a[0] for a, b in zip(part, part[1:])]
    first = sorted(gaps)[len(gaps) // 2] if gaps else 1.0
    weights = [first, *gaps]
    total = sum(weights) or 1.0
    return {u: round(sum(w * p.get(u, 0.0) for w, (_, p, _) in zip(weights, part)) / total, 1)
            for u in uplinks}


def count_mean(part: Sequence[tuple[float, Mapping[str, tuple[int, float]]]],
               uplinks: Sequence[str]) -> dict[str, float]:
    """Each uplink's packets/s over polls ``part`` of ``(time, {uplink: (packets,
    seconds)})``: all its packets over all its seconds.

    >>> count_mean([(0.0, {"u": (10, 0.05)}), (0.3, {"u": (50, 0.25)})], ["u"])
    {'u': 200.0}
    """
    out: dict[str, float] = {}
    for u in uplinks:
        pkts = sum(c.get(u, (0, 0.0))[0] for _, c in part)
        secs = sum(c.get(u, (0, 0.0))[1] for _, c in part)
        out[u] = round(pkts / secs, 1) if secs > 0 else 0.0
    return out if part else {}

