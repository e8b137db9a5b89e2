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
DEFAULT_DURATION_S = 12.0
"""Seconds the elephants run when neither the command line (``--scenario-duration-s``) nor
the scenario (:attr:`scenarios.registry.Scenario.duration_s`) says otherwise."""
DEFAULT_FLOW_RATE_PPS = 250.0
"""Packets/s of each elephant (its NIC's DCQCN line rate). With the native switches
(p4sim/native) the default fabric on the 2-core machines sustains this with the story
intact while ~8 other jobs share the cores (measured: the collision offers 95-104 % of
the uplink, GOR's loop 78-110 ms, a few hundred tail drops); at 500 pps the senders fall
short of the collision (75-89 %), at 1000 pps and more the uplinks tail-drop and
go-back-N retransmits most of what is sent (p4sim/README.md, "The testbed's time
scale"). It was 60 while the Python engine forwarded the fabric."""


@dataclass(slots=True)
class ScenarioOptions:
    """Knobs of a scenario: ``flows`` elephants of ``flow_rate_pps`` on ``rail`` for
    ``duration_s``, telemetry (and GOR) every ``period_s``, every ``fast_period_s`` while
    GOR is busy (an alarm, a move in flight: ``GorLoop.busy``); ``queue_rate_pps`` None
    sizes the uplinks from the flows (:data:`scenarios.story.EVEN_UTIL`); ``insecure``:
    the agents use HMAC tokens, not mutual TLS (the testbed's ``--insecure``);
    ``monitor_port``: the port of the monitor's web view in the scenarios that run the
    monitor (``faults``; ``--monitor-port``, ``MONITOR_PORT``; 0: a free one)."""

    seed: Optional[int] = None
    rail: int = 0
    flows: int = 8
    flow_rate_pps: float = DEFAULT_FLOW_RATE_PPS
    duration_s: float = DEFAULT_DURATION_S
    period_s: float = 0.25
    fast_period_s: float = 0.1
    queue_rate_pps: Optional[float] = None
    runs_root: Path = RUNS
    insecure: bool = False
    state_path: Optional[Path] = None     # the testbed's state file (faults go beside it)
    monitor_port: int = 0                 # the monitor's web view (0: a free port)


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


__all__ = ["DEFAULT_DURATION_S", "DEFAULT_FLOW_RATE_PPS", "RUNS", "ScenarioOptions", "ScenarioResult", "live_line"]


Tick = tuple[float, dict[str, float], int]
"""(monotonic time of the poll, packets/s per uplink in the interval it ends, drops)."""


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


def window_mean(counts: Sequence[tuple[float, Mapping[str, tuple[int, float]]]],
                part: Sequence[Tick], uplinks: Sequence[str],
                since: Optional[float] = None) -> dict[str, float]:
    """:func:`count_mean` over the polls of ``counts`` from the first to the last of the
    polls ``part`` (the same polls: both lists are appended by one tick). Per-poll rates
    are not averaged: polls come at uneven intervals (an alarm makes GOR poll early, a
    loaded machine delays one), and packets over seconds weighs each as it should.
    ``since``: an uplink's reading whose interval began before it is left out (a switch
    slow to answer gives one reading over seconds, with packets from before an event),
    and an uplink left with no reading is left out of the answer.

    >>> window_mean([(0.0, {"u": (5, 0.1)}), (0.3, {"u": (60, 0.3)}), (0.5, {"u": (40, 0.2)})],
    ...             [(0.3, {"u": 200.0}, 0), (0.5, {"u": 200.0}, 0)], ["u"])
    {'u': 200.0}
    >>> window_mean([(2.0, {"u": (90, 1.8)}), (2.5, {"u": (0, 0.5)})],
    ...             [(2.0, {}, 0), (2.5, {}, 0)], ["u"], since=1.0)
    {'u': 0.0}
    """
    if not part:
        return {}
    polls = [c for c in counts if part[0][0] <= c[0] <= part[-1][0]]
    if since is None:
        return count_mean(polls, uplinks)
    polls = [(t, {u: v for u, v in c.items() if t - v[1] >= since}) for t, c in polls]
    read = {u for _, c in polls for u, v in c.items() if v[1] > 0}
    return count_mean(polls, [u for u in uplinks if u in read])    # unread: not 0 pps

