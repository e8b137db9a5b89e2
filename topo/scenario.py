"""Scenarios of ``make run`` on a live testbed (``python -m topo.testbed up --scenario NAME``).

* ``default`` — the Astral story (:mod:`topo.story`): NIC-emulator elephants with random
  source ports collide on a leaf uplink → ECN alarms → GOR re-routes them through the
  TCCL agents → balanced uplinks; narrative, decision log and a report with before/after
  figures in ``runs/<timestamp>/``. ``gor`` is kept as another name for it.
* ``link-failure`` (:mod:`topo.link_failure`) — a leaf uplink goes down under traffic;
  GOR takes it out of the ECMP groups at both ends and re-plans.
* ``dead-link`` — the same cable dies silently (only the spine's end goes down, GOR is
  not told): GOR finds it from the counters and takes it out the same way.
* ``alltoall`` (:mod:`topo.alltoall`) — an MoE all-to-all between two blocks on one rail,
  random source ports (a colliding draw), TCCL's, then the random ones with GOR on:
  per-uplink max/mean and completion.

Shared pieces: :class:`ScenarioOptions`, the uplink queue rates through p4sim's control
API (:func:`set_uplink_rates`: congestion comes from switch queue rates on these
machines, there is no netem), and the live per-uplink line.

>>> ScenarioOptions().flows, SCENARIOS[:2]
(8, ('default', 'gor'))
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from topo.telemetry import LinkId, LinkSample

SCENARIOS = ("default", "gor", "link-failure", "dead-link", "alltoall")
RUNS = Path(__file__).resolve().parents[1] / "runs"


@dataclass(slots=True)
class ScenarioOptions:
    """Knobs of a scenario: ``flows`` elephants of ``flow_rate_pps`` on ``rail`` for
    ``duration_s``, telemetry (and GOR) every ``period_s``, every ``fast_period_s`` while
    GOR is busy (an alarm, a move in flight: ``GorLoop.busy``); ``queue_rate_pps`` None
    sizes the uplinks from the flows (:data:`topo.story.EVEN_UTIL`)."""

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


def _leaf_uplinks(fabric: Any) -> list[tuple[str, int]]:
    return [(sw.name, p) for sw in fabric.switches if sw.role == "leaf"
            for p, info in sorted(sw.ports.items()) if info.kind == "uplink"]


def set_uplink_rates(fabric: Any, state: Any, rate_pps: float,
                     say: Callable[[str], None]) -> dict[tuple[str, int], float]:
    """Set ``rate_pps`` (whole packets per second) on every leaf uplink through the
    target's queue control (:func:`testbed.control.open_control`: p4sim's control API,
    BMv2's Thrift runtime); the rates set. A switch whose control fails raises
    :class:`testbed.control.ControlError`: a story without its queue rates would measure
    nothing, so it does not go on without them."""
    from testbed.control import open_control  # noqa: PLC0415
    rate = max(1, round(rate_pps))
    done: dict[tuple[str, int], float] = {}
    by_switch: dict[str, list[int]] = {}
    for name, port in _leaf_uplinks(fabric):
        by_switch.setdefault(name, []).append(port)
    for name, ports in by_switch.items():
        ctl = open_control(state.target, state.switches.get(name, {}), name)
        try:
            for port in ports:
                ctl.set_queue_rate(rate, port=port)
                done[(name, port)] = float(rate)
        finally:
            ctl.close()
    say(f"scenario: {len(done)} leaf uplinks drain {rate} packets/s "
        f"({state.target} {'control API' if state.target == 'p4sim' else 'Thrift runtime'})")
    return done


def clear_rates(state: Any, rates: dict[tuple[str, int], float]) -> None:
    """Queues back to unlimited (best effort on the way out)."""
    from testbed.control import open_control  # noqa: PLC0415
    for (name, port) in rates:
        try:
            ctl = open_control(state.target, state.switches[name], name)
            try:
                ctl.set_queue_rate(0, port=port)
            finally:
                ctl.close()
        except Exception:  # noqa: BLE001 — best effort on the way out
            pass


def live_line(uplinks: Sequence[str]) -> Callable[[float, dict[LinkId, LinkSample]], None]:
    """A printer of one line per interval: utilisation, pps, ECN marks, queue depth."""
    def tick(t_s: float, samples: dict[LinkId, LinkSample]) -> None:
        parts = [f"{l} {s.util_pct:5.1f}% {s.pps:6.0f} pps ecn {s.marks:4d} q {s.max_qdepth:3d}"
                 for l, s in sorted(samples.items(), key=lambda kv: str(kv[0]))
                 if str(l) in uplinks]
        print(f"  t={t_s:5.1f}s  " + " | ".join(parts), flush=True)
    return tick


def run_scenario(name: str, fabric: Any, programmer: Any, state: Any,
                 save_state: Callable[[], None], opts: Optional[ScenarioOptions] = None,
                 say: Callable[[str], None] = print) -> ScenarioResult:
    """Run scenario ``name`` (one of :data:`SCENARIOS`) on a running testbed."""
    if name not in SCENARIOS:
        say(f"scenario: unknown scenario {name!r} (known: {', '.join(SCENARIOS)})")
        return ScenarioResult(2)
    if programmer is None:
        say("scenario: the switches are not programmed: the scenario cannot run")
        return ScenarioResult(2)
    if name == "alltoall":
        from topo.alltoall import run_alltoall  # noqa: PLC0415
        a2a = run_alltoall(fabric, programmer, state, save_state, opts or ScenarioOptions(), say)
        return ScenarioResult(a2a.status, a2a.run_dir)
    if name in ("link-failure", "dead-link"):
        from topo.link_failure import run_link_failure  # noqa: PLC0415
        failure = run_link_failure(fabric, programmer, state, save_state,
                                   opts or ScenarioOptions(), say, silent=name == "dead-link")
        return ScenarioResult(failure.status, failure.run_dir)
    from topo.story import run_story  # noqa: PLC0415 (servers and threads: only when run)
    story = run_story(fabric, programmer, state, save_state, opts or ScenarioOptions(), say)
    return ScenarioResult(story.status, story.run_dir)


__all__ = ["RUNS", "SCENARIOS", "ScenarioOptions", "ScenarioResult", "clear_rates", "live_line",
           "run_scenario", "set_uplink_rates"]
