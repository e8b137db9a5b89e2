"""GOR on a live p4sim testbed as figures (root + Mininet; skipped otherwise).

``gor.story`` — one run of :func:`scenarios.story.run_story` (the ``make run`` default
scenario, seed 7) on a fabric brought up for it:

* ``gor.loop_s`` — first ECN alarm → the last re-routed elephant seen on its new uplink
  (a ``flow_sample_t`` digest of its new 5-tuple there), from the decision log;
* ``gor.max_util_after_pct`` — the busiest of the source leaf's uplinks after the last
  move settled, mean packets/s in % of the uplink queue rate (GOR's basis; goal < 75);
* ``gor.drops_during_move`` — the switches' drop counters summed over every fabric
  link from the first order to the last move settled (goal 0);
* ``testbed.flow_pps.default`` — the rate the story's elephants run at: each flow's data
  packets received by its NIC emulator over the story's duration, median over the flows
  (issue 32's goal: thousands per elephant; the story runs at
  ``scenarios.story.STORY_FLOW_RATE_PPS``).

``gor.dead_link`` — one run of ``SCENARIO=dead-link`` (:func:`scenarios.link_failure.run_link_failure`
with ``silent=True``, seed 7): a leaf uplink dies silently (only its spine end goes down,
GOR is not told):

* ``gor.dead_link_detect_s`` — the cable going down → GOR's ``link_down`` from the
  counters, the ECMP groups rewritten;
* ``gor.dead_link_lost_pkts`` — data packets sent and never received, over every flow
  (those sent into the dead cable until the groups were rewritten).

``gor.switch_restart`` — the story (seed 7, 24 s) with the source leaf's switch process
restarted (stopped, started again empty with the same command) once GOR's moves settled;
GOR is not told:

* ``gor.switch_reconcile_s`` — the new process listening → GOR's ``switch_back``: found
  lost, reconnected with the same election id, pipeline pushed, plan re-installed with
  the live ECMP groups, GOR's own entries re-installed;
* ``gor.switch_lost_s`` — the process stopped → GOR's ``switch_lost``.

``gor.detour`` — :func:`scenarios.detour_probe.probe_detour` (cable b0r0l0 – s1 cut, 64
datagrams one per source port from b1r0l0's NIC to b0r0l0's):

* ``gor.detour_write_s`` — ``link_down`` → the ends' groups and every leaf's detours written;
* ``gor.detour_lost_before`` / ``gor.detour_lost_after`` — datagrams (of 64) lost with the
  cable cut before GOR heard of it / after (goal 0).

>>> [b.name for b in BENCHMARKS]
['story', 'dead_link', 'switch_restart', 'detour']
"""
from __future__ import annotations

import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

from bench.results import BenchConfig, Benchmark, Figure
from scenarios.common import ScenarioOptions
from scenarios.detour_probe import probe_detour
from scenarios.gor_session import restart_after_moves
from scenarios.link_failure import run_link_failure
from scenarios.story import STORY_FLOW_RATE_PPS, StoryResult, run_story, shortfalls
from testbed.traffic import testbed_unavailable, testbed_up

FIGURES = ("gor.loop_s", "gor.max_util_after_pct", "gor.drops_during_move",
           "testbed.flow_pps.default")
DEAD_LINK_FIGURES = ("gor.dead_link_detect_s", "gor.dead_link_lost_pkts")
RESTART_FIGURES = ("gor.switch_reconcile_s", "gor.switch_lost_s")
DETOUR_FIGURES = ("gor.detour_write_s", "gor.detour_lost_before", "gor.detour_lost_after")
RESTART_LEAF = "b0r0l0"


@contextmanager
def _live_testbed(name: str, figures: Sequence[str]) -> Iterator[Optional[tuple[Any, Path]]]:
    """A p4sim fabric brought up for benchmark ``gor.<name>`` (and its scratch folder), or
    None — with the reason printed — where this machine cannot run one."""
    why = testbed_unavailable()
    if why:
        print(f"gor.{name}: skipped, {why}; {tuple(figures)} not written", file=sys.stderr)
        yield None
        return
    tmp = Path(tempfile.mkdtemp(prefix=f"gor-{name.replace('_', '-')}-"))
    with testbed_up(log_dir=tmp / "logs", state_path=tmp / "state.json") as tb:
        yield tb, tmp


def flow_pps(delivery: dict[str, tuple[int, int]], duration_s: float) -> Optional[float]:
    """Median over the flows of packets received / ``duration_s`` (``delivery``: label →
    (sent, received), as ``StoryResult.delivery``); None without flows.

    >>> flow_pps({"a": (3000, 2990), "b": (3000, 2400), "c": (10, 0)}, 12.0)
    200.0
    """
    rates = sorted(received / duration_s for _sent, received in delivery.values())
    if not rates or duration_s <= 0:
        return None
    mid = len(rates) // 2
    return round(rates[mid] if len(rates) % 2 else (rates[mid - 1] + rates[mid]) / 2, 1)


def story_figures(res: StoryResult, duration_s: float) -> dict[str, Figure]:
    """The ``gor.story`` figures of one story run; a story that failed (its exit status not
    0: no move, no "after" window, ...) raises ``RuntimeError`` with its reasons and what
    it did measure, so that ``make bench`` exits 1 and writes none of them (its loop and
    rates are those of a run that did not show what the story claims).

    >>> story_figures(StoryResult(0, loop_s=0.8, max_util_after_pct=70.5, drops_during_move=0,
    ...                           delivery={"a": (9000, 8990)}), 6.0)["gor.loop_s"].value
    0.8
    >>> story_figures(StoryResult(1, loop_s=9.7, max_util_before_pct=105.0,
    ...                           delivery={"a": (9000, 8990)}), 6.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    RuntimeError: gor.story: the story failed (exit status 1): GOR raised no ECN alarm ...
    """
    pps = flow_pps(res.delivery, duration_s)
    if res.status != 0:
        why = "; ".join(shortfalls(res) + res.errors) or "see its report"
        raise RuntimeError(f"gor.story: the story failed (exit status {res.status}): {why}; "
                           f"measured, not written: loop {res.loop_s} s, {pps} pps per flow")
    out: dict[str, Figure] = {}
    if pps is not None:
        out["testbed.flow_pps.default"] = Figure(pps, "pps")
    if res.loop_s is not None:
        out["gor.loop_s"] = Figure(res.loop_s, "s")
    if res.max_util_after_pct is not None:
        out["gor.max_util_after_pct"] = Figure(res.max_util_after_pct, "%")
    if res.drops_during_move is not None:
        out["gor.drops_during_move"] = Figure(float(res.drops_during_move), "packets")
    return out


def bench_story(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001 — one live run
    """One run of ``scenarios.story.run_story`` on a fabric brought up for it (figures:
    :func:`story_figures`)."""
    with _live_testbed("story", FIGURES) as live:
        if live is None:
            return {}
        tb, tmp = live
        opts = ScenarioOptions(seed=7, runs_root=tmp / "runs", flow_rate_pps=STORY_FLOW_RATE_PPS)
        res = run_story(tb.fabric, tb.programmer, tb.state, tb.save_state, opts)
    return story_figures(res, opts.duration_s)


def bench_dead_link(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001 — one live run
    """One run of ``SCENARIO=dead-link`` on a fabric brought up for it."""
    with _live_testbed("dead_link", DEAD_LINK_FIGURES) as live:
        if live is None:
            return {}
        tb, tmp = live
        res = run_link_failure(tb.fabric, tb.programmer, tb.state, tb.save_state,
                               ScenarioOptions(seed=7, runs_root=tmp / "runs"), silent=True)
    if res.regroup_s is None or not res.detected_by.startswith("counters"):
        print(f"gor.dead_link: GOR did not find the dead link ({res.detected_by or 'no link_down'})",
              file=sys.stderr)
        return {}
    return {"gor.dead_link_detect_s": Figure(res.regroup_s, "s"),
            "gor.dead_link_lost_pkts": Figure(float(res.lost_pkts), "packets")}


def bench_switch_restart(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001 — one live run
    """The story with the source leaf's switch process restarted after GOR's moves settled."""
    sessions: list[Any] = []
    with _live_testbed("switch_restart", RESTART_FIGURES) as live:
        if live is None:
            return {}
        tb, tmp = live
        run_story(tb.fabric, tb.programmer, tb.state, tb.save_state,
                  ScenarioOptions(seed=7, runs_root=tmp / "runs", duration_s=24.0),
                  midway=restart_after_moves(RESTART_LEAF, tb.fnet.restart_switch, sessions))
    recs = sessions[0].switch_restarts if sessions else []
    if not recs or recs[0].reconcile_s is None or recs[0].lost_s is None:
        print(f"gor.switch_restart: GOR did not reconcile {RESTART_LEAF} ({recs})", file=sys.stderr)
        return {}
    rec = recs[0]
    return {"gor.switch_reconcile_s": Figure(rec.reconcile_s, "s"),
            "gor.switch_lost_s": Figure(rec.lost_s, "s")}


def bench_detour(config: BenchConfig) -> dict[str, Figure]:  # noqa: ARG001 — one live run
    """A cut cable probed before and after GOR's detours, on a fabric brought up for it."""
    with _live_testbed("detour", DETOUR_FIGURES) as live:
        if live is None:
            return {}
        r = probe_detour(live[0], "b0r0l0", "s1")
    return {"gor.detour_write_s": Figure(r.written_s, "s"),
            "gor.detour_lost_before": Figure(float(r.lost_before), "datagrams"),
            "gor.detour_lost_after": Figure(float(r.lost_after), "datagrams")}


BENCHMARKS: tuple[Benchmark, ...] = (Benchmark("story", "gor", bench_story),
                                     Benchmark("dead_link", "gor", bench_dead_link),
                                     Benchmark("switch_restart", "gor", bench_switch_restart),
                                     Benchmark("detour", "gor", bench_detour))
