"""The scenarios of ``make run SCENARIO=NAME``: one record each, read by the command line
(``python -m scenarios --list``), by ``make run`` and by the README's table (a test keeps
the table equal to :data:`SCENARIOS`).

Every scenario has one shape: it plans its flows on the fabric, runs them on the live
testbed with GOR, and writes a report in ``runs/<time>/``; its ``run`` returns an object
with ``status`` (0 only when it measured what it tells) and ``run_dir``.

>>> [s.name for s in SCENARIOS.values()][:3]
['default', 'link-failure', 'dead-link']
>>> scenario("gor").name                   # another name for the story
'default'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from scenarios.alltoall import run_alltoall
from scenarios.common import ScenarioOptions, ScenarioResult
from scenarios.faults import run_faults
from scenarios.fornax import run_fornax
from scenarios.incast import run_incast
from scenarios.link_failure import run_link_failure
from scenarios.story import STORY_FLOW_RATE_PPS, run_story, story_duration_s, story_flow_rate_pps
from scenarios.tor_failure import run_tor_failure, unfit as tor_failure_unfit
from testbed.cli import choose_target, preflight

NONE = ("none", "")          # SCENARIO=none or empty: the fabric comes up, no scenario runs


@dataclass(frozen=True, slots=True)
class Scenario:
    """One scenario: ``name``, other names, a one-line ``summary`` (the README's table),
    and ``runner(fabric, programmer, state, save_state, opts, say)`` — or, for a scenario
    that brings up a network of its own (``network="own"``: FORNAX's VPC testbed instead
    of the fabric), ``runner(args)`` with the command line's ``up`` options, returning the
    exit status."""
    name: str
    summary: str
    runner: Callable[..., Any]
    aliases: tuple[str, ...] = field(default_factory=tuple)
    network: str = "fabric"
    flow_rate_pps: Optional[float] = None
    """The scenario's elephant rate when the command line gives none (``None``:
    ``scenarios.common.DEFAULT_FLOW_RATE_PPS``)."""
    flow_rate_of: Optional[Callable[[Any], float]] = None
    """The scenario's elephant rate on a fabric (``topo.model.Fabric`` -> packets/s), when
    the command line gives none; before :attr:`flow_rate_pps` (the story's is
    :func:`scenarios.story.story_flow_rate_pps`, lower on a fabric with a core tier)."""
    duration_s: Optional[Callable[[Any], float]] = None
    """The scenario's run length on a fabric (``topo.model.Fabric`` -> seconds) when the
    command line gives none (``None``: ``scenarios.common.DEFAULT_DURATION_S``): the story's
    is :func:`scenarios.story.story_duration_s`, longer on a fabric with a core tier."""
    unfit: Optional[Callable[[Any], Optional[str]]] = None
    """Why the scenario cannot run on a fabric (``topo.model.Fabric`` -> a sentence, None
    when it can), asked before the testbed starts (``None``: it runs on any fabric)."""


def _story(*args: Any) -> Any:
    return run_story(*args)


def _link_failure(*args: Any) -> Any:
    return run_link_failure(*args)


def _dead_link(*args: Any) -> Any:
    return run_link_failure(*args, silent=True)


def _alltoall(*args: Any) -> Any:
    return run_alltoall(*args)


def _incast(*args: Any) -> Any:
    return run_incast(*args)


def _faults(*args: Any) -> Any:
    return run_faults(*args)


def _tor_failure(*args: Any) -> Any:
    return run_tor_failure(*args)


def _fornax(args: Any) -> int:
    preflight(args.state)
    status, _ = run_fornax(target=choose_target(args.target), runs_root=args.runs.resolve(),
                           insecure=bool(args.insecure), state_path=args.state, p4c=args.p4c)
    return status


SCENARIOS: dict[str, Scenario] = {s.name: s for s in (
    Scenario("default", "the Astral story: colliding RoCEv2 elephants, ECN alarms, GOR moves "
             "them through the TCCL agents, balanced uplinks", _story, ("gor",),
             flow_rate_pps=STORY_FLOW_RATE_PPS, flow_rate_of=story_flow_rate_pps,
             duration_s=story_duration_s),
    Scenario("link-failure", "a leaf uplink goes down under traffic: GOR takes it out of the "
             "ECMP groups and routes around it", _link_failure),
    Scenario("dead-link", "the same cable dies silently: GOR finds it from the counters",
             _dead_link),
    Scenario("alltoall", "an MoE all-to-all on one rail: random ports, TCCL's, random + GOR",
             _alltoall),
    Scenario("incast", "N senders to one receiver through one leaf port, static then dynamic "
             "(shared-buffer) PFC/ECN thresholds side by side: pauses, marks, drops, "
             "fairness, and one flow alone on the switch", _incast),
    Scenario("faults", "the monitor watching traffic while nine kinds of fault are injected in "
             "turn: what the localiser named, and how fast", _faults),
    Scenario("tor-failure", "dual-port NICs (SPEC=topo/specs/dualport.yaml): one leaf of a "
             "rail dies under RDMA traffic; its QPs move to the NICs' other port, no flow is "
             "lost", _tor_failure, unfit=tor_failure_unfit),
    Scenario("fornax", "FORNAX on two SmartNICs: VPC sessions of real TCP between VMs of "
             "overlapping VPCs; a policy change, a corrupted entry and a hung NIC, no "
             "connection broken", _fornax, network="own"),
)}


def scenario(name: str) -> Scenario:
    """The scenario called ``name`` (or one of its aliases); KeyError naming the known ones.

    >>> scenario("nope")
    Traceback (most recent call last):
    KeyError: "unknown scenario 'nope' (known: default, gor, link-failure, dead-link, alltoall, incast, faults, tor-failure, fornax, none)"
    """
    for s in SCENARIOS.values():
        if name == s.name or name in s.aliases:
            return s
    known = [n for s in SCENARIOS.values() for n in (s.name, *s.aliases)] + ["none"]
    raise KeyError(f"unknown scenario {name!r} (known: {', '.join(known)})")


def run_scenario(name: str, fabric: Any, programmer: Any, state: Any,
                 save_state: Callable[[], None], opts: Optional[ScenarioOptions] = None,
                 say: Callable[[str], None] = print) -> ScenarioResult:
    """Run scenario ``name`` on a running, programmed testbed; status 2 when it cannot run."""
    try:
        sc = scenario(name)
    except KeyError as exc:
        say(f"scenario: {exc.args[0]}")
        return ScenarioResult(2)
    if sc.network != "fabric":
        say(f"scenario: {sc.name} brings up a network of its own: run it with "
            f"`python -m scenarios up --scenario {sc.name}`")
        return ScenarioResult(2)
    if programmer is None:
        say("scenario: the switches are not programmed: the scenario cannot run")
        return ScenarioResult(2)
    res = sc.runner(fabric, programmer, state, save_state, opts or ScenarioOptions(), say)
    return ScenarioResult(res.status, res.run_dir)


__all__ = ["NONE", "SCENARIOS", "Scenario", "run_scenario", "scenario"]
