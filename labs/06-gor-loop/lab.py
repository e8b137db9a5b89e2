"""Lab 06 plugin, the GOR loop: judge the student's ``gor_loop.py`` (alarms → hot links,
digests → elephants, a safe re-route decision) on hand-built telemetry of a small fabric,
with the controller's own types, and measure the outcome of the student's moves in the
flow-level simulator of ``controller/gor/simulate.py``.

Pure Python: no switch is needed (``target`` is accepted and ignored).

Example::

    $ make -C labs/06-gor-loop check
"""
from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

from controller.fabric import plan_fabric
from controller.gor import (AlarmMonitor, ElephantFlow, FlowKey, FlowTable, LinkKey, LinkState,
                            PathChoice, PathEngine)
from controller.gor.simulate import link_loads, max_min_fair, utilisation
from labs.labkit import Report
from labs.labkit.student import describe_exception, load_student_module
from p4src.hashmodel import FabricHashModel
from topo.model import Fabric, build_fabric
from topo.spec import FabricSpec

TITLE = "The GOR loop: from ECN alarms and sampled elephants to a safe re-route"
FILES = ("gor_loop.py",)
SWITCH = False          # no switch, no root: TARGET is ignored (the banner says so)

SAFETY = 0.75
SRC_LEAF, DST_LEAF = "b0r0l0", "b1r0l0"
HOT: LinkKey = (SRC_LEAF, 3)                      # the leaf's uplink to spine s0
GBPS = 1e9
_EPS = 1e-9


# ----------------------------------------------------------------------------- the fabric
def fabric() -> Fabric:
    """Two blocks, one rail, three spines: leaf b0r0l0 reaches b1r0l0 via s0, s1 or s2."""
    return build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=1, spines=3))


# ----------------------------------------------------------------------------- the cases
class Case(NamedTuple):
    """One decision case: background utilisation of each spine's path (uplink, downlink),
    the elephants ``(rate Gb/s, spine they use now)``, and what it teaches."""

    name: str
    lesson: str
    background: dict[str, tuple[float, float]]
    elephants: tuple[tuple[float, str], ...]
    safe_exists: bool


CASES = (
    Case("two elephants collide on s0", "move one elephant to a free spine",
         {"s0": (0.10, 0.0), "s1": (0.0, 0.0), "s2": (0.30, 0.30)},
         ((40, "s0"), (40, "s0"), (10, "s1")), True),
    Case("the greedy trap", "check every link of the path, not only the leaf's uplink",
         {"s0": (0.45, 0.0), "s1": (0.10, 0.45), "s2": (0.30, 0.30)},
         ((40, "s0"),), True),
    Case("your own moves count", "update the loads after each move of the round",
         {"s0": (0.0, 0.0), "s1": (0.40, 0.40), "s2": (0.50, 0.50)},
         ((20, "s0"),) * 5, True),
    Case("no safe path", "when every path would go over 75 %, leave the flow where it is",
         {"s0": (0.45, 0.0), "s1": (0.60, 0.60), "s2": (0.70, 0.30)},
         ((50, "s0"),), False),
)


class Scenario(NamedTuple):
    """A case laid onto the fabric: link state, elephants, candidate paths by flow."""

    links: LinkState
    elephants: list[ElephantFlow]
    candidates: dict[FlowKey, list[PathChoice]]
    path_of: dict[str, PathChoice]
    engine: PathEngine


def scenario(case: Case, fab: Fabric) -> Scenario:
    """Link loads = background + the elephants on their current paths (100 Gb/s links)."""
    links = LinkState.from_fabric(fab)
    hm = FabricHashModel({n: p.hash_model() for n, p in plan_fabric(fab).items()})
    engine = PathEngine(fab, hm, links, safety=SAFETY)
    paths = engine.candidate_paths(SRC_LEAF, DST_LEAF)
    path_of = {p.spine: p for p in paths}
    for spine, (up, down) in case.background.items():
        links.set_util(path_of[spine].links[0], up)
        links.set_util(path_of[spine].links[1], down)
    elephants = []
    for i, (gbps, spine) in enumerate(case.elephants):
        flow = FlowKey(f"10.0.0.{1 + i % 2}", f"10.1.0.{1 + i // 2 % 2}", 17, 49152 + i, 4791)
        for l in path_of[spine].links:
            links.load_bps[l] = links.load_bps.get(l, 0.0) + gbps * GBPS
        elephants.append(ElephantFlow(flow, gbps * GBPS, SRC_LEAF, DST_LEAF,
                                      current=path_of[spine]))
    return Scenario(links, elephants, {e.flow: list(paths) for e in elephants}, path_of, engine)


def measured_util(sc: Scenario, placed: dict[FlowKey, PathChoice]) -> dict[LinkKey, float]:
    """Utilisation of every link with the elephants on ``placed`` paths, measured in the
    flow-level simulator (max-min fair, each elephant demanding its rate)."""
    links = sc.links
    background = dict(links.load_bps)
    for e in sc.elephants:
        if e.current is not None:
            for l in e.current.links:
                background[l] = max(background.get(l, 0.0) - e.rate_bps, 0.0)
    flows = {e.flow: (placed[e.flow].links, e.rate_bps) for e in sc.elephants}
    rates = max_min_fair(flows, links.capacity_bps, background)
    return utilisation(link_loads(flows, rates, background), links.capacity_bps)


def _link(l: LinkKey) -> str:
    return f"{l[0]}:{l[1]}"


# ----------------------------------------------------------------------------- judging
def judge_case(r: Report, case: Case, moves: Any, sc: Scenario) -> None:
    """Check the student's moves for ``case`` and measure the result."""
    what = f"decide(): {case.name}"
    by_flow = {e.flow: e for e in sc.elephants}
    if not isinstance(moves, list) or not all(isinstance(m, tuple) and len(m) == 2
                                              and isinstance(m[1], PathChoice) for m in moves):
        r.fail(what, "decide() must return a list of (flow, PathChoice) tuples")
        return
    placed = {e.flow: e.current for e in sc.elephants if e.current is not None}
    for flow, path in moves:
        e = by_flow.get(flow)
        if e is None or e.current is None or HOT not in e.current.links:
            r.fail(what, f"you moved {flow}, which is not on the hot link {_link(HOT)}: "
                         "only move the elephants whose current path uses the hot link")
            return
        if path not in sc.candidates[flow] or path == e.current:
            r.fail(what, f"{flow} was sent to {path}, which is not one of its other candidate "
                         "paths: pick from candidates[e.flow] and skip e.current")
            return
        placed[flow] = path
    before = measured_util(sc, {e.flow: e.current for e in sc.elephants
                                if e.current is not None})
    after = measured_util(sc, placed)
    new_hot = [l for l, u in sorted(after.items())
               if u > SAFETY + _EPS and not (before.get(l, 0) > SAFETY and u <= before[l] + _EPS)]
    r.note(f"{case.name}: {len(moves)} move(s); hot link {_link(HOT)} "
           f"{before[HOT]:.0%} -> {after[HOT]:.0%}; busiest link "
           f"{max(before.values()):.0%} -> {max(after.values()):.0%}")
    if new_hot:
        l = new_hot[0]
        r.fail(what, f"after your moves link {_link(l)} runs at {after[l]:.0%} (over "
                     f"{SAFETY:.0%}): a new hotspot. Lesson: {case.lesson}.")
    elif case.safe_exists and after[HOT] > SAFETY + _EPS:
        r.fail(what, f"the hot link {_link(HOT)} is still at {after[HOT]:.0%} after "
                     f"{len(moves)} move(s); a safe re-route exists. Move elephants, fastest "
                     f"first, until it is at most {SAFETY:.0%}. Lesson: {case.lesson}.")
    elif not case.safe_exists and moves:
        r.fail(what, f"no path is safe here, yet you moved {len(moves)} flow(s). "
                     f"Lesson: {case.lesson}.")
    else:
        r.ok(f"{what}: hot link {after[HOT]:.0%}, every link at most {SAFETY:.0%} "
             "or no hotter than before (measured in the flow-level simulator)")


def check_alarms(r: Report, mod: ModuleType) -> None:
    """Step 1: three intervals; hysteresis keeps a link hot for 0.5 s after marks stop."""
    up, down, notice, idle = HOT, ("s0", 2), (SRC_LEAF, 4), (SRC_LEAF, 5)
    monitor = AlarmMonitor()
    script = [(1.0, {up: (80, 1000), down: (300, 1000), notice: (15, 1000), idle: (3, 5)},
               [down, up], "8 % and 30 % of packets marked: WARNING and CRITICAL"),
              (1.1, {up: (0, 1000), down: (0, 1000), notice: (0, 1000), idle: (0, 0)},
               [down, up], "marks stopped 0.1 s ago: the alarms are held (hysteresis)"),
              (2.0, {up: (0, 1000), down: (0, 1000), notice: (0, 1000), idle: (0, 0)},
               [], "quiet for 1 s: the alarms clear")]
    for t_s, counters, want, story in script:
        got = mod.hot_links(monitor, counters, t_s)
        if got != want:
            r.fail(f"hot_links() at t={t_s}s ({story})",
                   f"expected {[_link(l) for l in want]} (worst first), got "
                   f"{[_link(l) for l in got] if isinstance(got, list) else got!r}. Give every "
                   "link's (marks, packets) to monitor.observe(), then return "
                   "monitor.active(AlarmLevel.WARNING).")
            return
    r.ok("hot_links(): WARNING/CRITICAL links, worst first, held by hysteresis, then cleared")


def check_elephants(r: Report, mod: ModuleType) -> None:
    """Step 2: digests of four flows on two links; two are elephants on the hot link."""
    table = FlowTable({1: SRC_LEAF}, one_in_n=1000, window_s=1.0)
    flows = [(49152, 3, 20), (49153, 3, 5), (49154, 4, 40), (49155, 3, 1)]   # sport, port, samples
    for sport, port, n in flows:
        for k in range(n):
            table.add([1, 0x0A000001, 0x0A010001, 17, sport, 4791, 1, port, 0, 1000],
                      t_s=0.5 + k * 0.01)
    got = mod.elephants_on(table, HOT, 1.0, 10 * GBPS / 1000)
    want = [49152, 49153]
    got_ports = [e.flow.sport for e in got] if isinstance(got, list) else got
    r.expect(got_ports == want, "elephants_on(): the flows on the hot link over the threshold, "
             "fastest first",
             f"expected source ports {want}, got {got_ports}: use table.top(n, link, t_s) and "
             "keep rate_bps >= min_rate_bps (a flow seen on another link is not on this one)")


def check(files_dir: Path, target: str) -> Report:
    """Judge the three functions of ``gor_loop.py`` (``target`` is not used)."""
    r = Report(TITLE)
    mod = load_student_module(files_dir / FILES[0])
    for step, name in ((check_alarms, "hot_links()"), (check_elephants, "elephants_on()")):
        try:
            step(r, mod)
        except Exception as exc:                 # the student's code may raise anything
            r.fail(f"{name} runs", "it raised " + describe_exception(files_dir / FILES[0], exc))
    fab = fabric()
    for case in CASES:
        sc = scenario(case, fab)
        try:
            moves = mod.decide(HOT, sc.elephants, sc.candidates, sc.links, SAFETY)
        except Exception as exc:
            r.fail(f"decide(): {case.name}",
                   "it raised " + describe_exception(files_dir / FILES[0], exc))
            continue
        judge_case(r, case, moves, sc)
    return r


def run(files_dir: Path, target: str) -> int:
    """Show each case: the loads, the student's moves, and what GOR's own engine does."""
    mod = load_student_module(files_dir / FILES[0])
    fab = fabric()
    print(f"fabric: {SRC_LEAF} -> {DST_LEAF} via s0, s1, s2 (100 Gb/s links); "
          f"hot link {_link(HOT)} (uplink to s0); safety {SAFETY:.0%}\n")
    for case in CASES:
        sc = scenario(case, fab)
        print(f"--- {case.name} ({case.lesson})")
        for spine, p in sc.path_of.items():
            print(f"  via {spine}: " + ", ".join(f"{_link(l)} {sc.links.util(l):.0%}"
                                                for l in p.links))
        print("  elephants: " + ", ".join(f"{e.flow.sport} {e.rate_bps / GBPS:g}G@"
                                           f"{e.current.spine if e.current else '?'}"
                                           for e in sc.elephants))
        moves = mod.decide(HOT, sc.elephants, sc.candidates, sc.links, SAFETY)
        placed = {e.flow: e.current for e in sc.elephants if e.current is not None}
        placed.update(dict(moves))
        after = measured_util(sc, placed)
        print("  your moves: " + (", ".join(f"{f.sport} -> {p.spine}" for f, p in moves)
                                  or "none"))
        print(f"  measured: hot link {after[HOT]:.0%}, busiest link {max(after.values()):.0%}")
        gor = sc.engine.decide([e for e in sc.elephants if e.current and HOT in e.current.links],
                               trigger=HOT)
        print("  GOR's engine (controller/gor/paths.py): "
              + (", ".join(f"{o.flow.sport} -> {o.path.spine}" for o in gor.orders) or "no move")
              + (f"; refused: {', '.join(f'{x.flow.sport} ({x.reason})' for x in gor.rejected)}"
                 if gor.rejected else "") + "\n")
    return 0
