"""The localiser's rules about links: a flapping cable, a blackholed route, a corrupting
link direction and a gray (lossy) link direction, each from the probe paths of a
:class:`~monitor.pathview.PathView` (a minimal boolean tomography: a link direction is bad
when *every* measured path crossing it is bad — the probe plan puts at least two paths
that share no other link on each direction, so with one bad direction only it passes),
checked against the tomography's own estimate (``Evidence.links``) and the port counters.

They run after the node rules (:mod:`monitor.rules`): paths a hung switch or a slow
receiver explains are not held against links. Order among them: flapping cables first
(a flap is not a gray or dead link), then blackholes (a route that drops one prefix makes
the links towards it look dead), corruption (bad-ICRC probes also miss the "received"
count), and gray links last.

>>> h = CableHistory()
>>> [h.update("cable a<->b", x, 0.3, t) for x, t in ((0.9, 0.0), (0.1, 2.0), (0.6, 4.0))][-1]
2
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Optional, Sequence

from monitor.evidence import Evidence, LinkDir, component
from monitor.pathview import Candidate, LocaliserConfig, PathView, names, pct

_BAD_STATES = ("lossy", "dead")


@dataclass(frozen=True, slots=True)
class DirectionLoss:
    """The measured paths crossing one link direction: how many, the least loss among
    them (the boolean tomography's estimate), the pooled loss and probes lost."""

    paths: tuple[str, ...]
    min_loss: float
    pooled_loss: float
    lost: int


def direction_loss(view: PathView, key: str, *, unexplained: bool = False) -> DirectionLoss:
    """The loss of a link direction from its measured crossing paths.

    >>> from monitor.evidence import PathStats
    >>> ev = Evidence(0.0, paths={"p0": PathStats("p0", 3.0, 30, 24)},
    ...               path_links={"p0": (LinkDir("b0s0-eth0", "b0r0l0"),)})
    >>> direction_loss(PathView.of(ev, LocaliserConfig()), "b0s0-eth0->b0r0l0").pooled_loss
    0.2
    """
    crossing = view.crossing(key, unexplained=unexplained)
    if not crossing:
        return DirectionLoss((), 0.0, 0.0, 0)
    facts = [view.paths[n] for n in crossing]
    sent = sum(f.sent for f in facts)
    lost = sum(f.lost for f in facts)
    return DirectionLoss(tuple(crossing), min(f.drop_loss for f in facts), lost / sent, lost)


def gray_threshold(view: PathView, cfg: LocaliserConfig) -> float:
    """The loss above which a direction is bad now: ``gray_min_loss``, or the median
    path's loss plus ``gray_excess_loss`` when noise costs every path (a loaded CPU)."""
    return max(cfg.gray_min_loss, view.baseline_loss() + cfg.gray_excess_loss)


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p): how likely noise of rate ``p`` loses ``k`` or
    more of ``n`` probes.

    >>> round(binomial_tail(7, 60, 0.033), 4), binomial_tail(0, 60, 0.03)
    (0.0036, 1.0)
    """
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    p = min(max(p, 1e-9), 1 - 1e-9)
    log_p, log_q = math.log(p), math.log1p(-p)
    total = 0.0
    for i in range(k, n + 1):
        total += math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                          + i * log_p + (n - i) * log_q)
    return min(1.0, total)


def direction_bad(ev: Evidence, view: PathView, key: str, threshold: float) -> Optional[bool]:
    """True (every crossing path loses ``threshold`` or more), False (the best path loses
    under half of it), ``None`` in between or unknown; with no measured path, the
    tomography's state decides."""
    d = direction_loss(view, key)
    if d.paths:
        if d.min_loss >= threshold:
            return True
        return False if d.min_loss < threshold / 2 else None
    est = ev.links.get(key)
    if est is None or est.state == "unknown":
        return None
    return est.state in _BAD_STATES


def counter_loss(ev: Evidence, src: str, dst: str, min_pps: float = 5.0) -> Optional[float]:
    """The fraction of the frames ``src`` sent towards ``dst`` that ``dst`` did not count
    as received, from the port counters (``None`` without both ends or with little traffic).

    >>> from monitor.evidence import PortRates
    >>> ev = Evidence(0.0, ports={("a", 1): PortRates("a", 1, tx_pps=100.0),
    ...                           ("b", 2): PortRates("b", 2, rx_pps=40.0)},
    ...               port_peer={("a", 1): "b", ("b", 2): "a"})
    >>> counter_loss(ev, "a", "b")
    0.6
    """
    tx = [r.tx_pps for k, r in ev.ports.items() if k[0] == src and ev.port_peer.get(k) == dst]
    rx = [r.rx_pps for k, r in ev.ports.items() if k[0] == dst and ev.port_peer.get(k) == src]
    if not tx or not rx or sum(tx) < min_pps:
        return None
    return max(0.0, 1.0 - sum(rx) / sum(tx))


# ----------------------------------------------------------------------------- flapping
@dataclass(slots=True)
class CableHistory:
    """Per cable, the times it went down and came back over the last ``window_s``.

    :meth:`update` takes the cable's loss level now (the lesser of its two directions'
    losses). With hysteresis: down when the level reaches ``down_at``; back up when it
    falls to ``up_frac`` of the episode's peak (a window of a few seconds never shows a
    short flap's "up" as zero loss, only as a dip); down again when it rises from its
    lowest since by the same factor (and to ``down_at``). Returns the downs in the window."""

    window_s: float = 20.0
    up_frac: float = 0.6
    _down: dict[str, bool] = field(default_factory=dict)
    _peak: dict[str, float] = field(default_factory=dict)
    _downs: dict[str, deque[float]] = field(default_factory=dict)
    _ups: dict[str, deque[float]] = field(default_factory=dict)
    _bad_since: dict[str, float] = field(default_factory=dict)
    _trough: dict[str, float] = field(default_factory=dict)
    _last_epoch: dict[str, int] = field(default_factory=dict)

    def update(self, cable: str, level: Optional[float], down_at: float, t_s: float) -> int:
        """Record the cable's loss level now (``None``: unknown, nothing changes)."""
        downs = self._downs.setdefault(cable, deque())
        ups = self._ups.setdefault(cable, deque())
        if level is not None:
            if not self._down.get(cable, False):
                trough = self._trough[cable] = min(self._trough.get(cable, 0.0), level)
                if level >= down_at and level >= trough / self.up_frac:
                    self._down[cable], self._peak[cable] = True, level
                    downs.append(t_s)
            else:
                self._peak[cable] = max(self._peak[cable], level)
                if level <= self.up_frac * self._peak[cable]:
                    self._down[cable], self._trough[cable] = False, level
                    ups.append(t_s)
        for q in (downs, ups):
            while q and q[0] < t_s - self.window_s:
                q.popleft()
        return len(downs)

    def feed(self, cable: str, levels: Sequence[tuple[int, float, float]], down_at: float,
             t_s: float) -> int:
        """Record the cable's per-epoch levels ``(epoch, end_s, level)`` it has not seen
        yet, in order, then the downs in the window at ``t_s``.

        >>> h = CableHistory()
        >>> h.feed("c", [(1, 1.0, 1.0), (2, 2.0, 0.0), (3, 3.0, 1.0)], 0.3, 3.5)
        2
        >>> h.feed("c", [(2, 2.0, 0.0), (3, 3.0, 1.0)], 0.3, 3.6)       # nothing new
        2
        """
        last = self._last_epoch.get(cable)
        for epoch, end_s, level in levels:
            if last is None or epoch > last:
                self.update(cable, level, down_at, end_s)
                last = epoch
        if last is not None:
            self._last_epoch[cable] = last
        return self.update(cable, None, down_at, t_s)

    def bad_for(self, cable: str, bad: Optional[bool], t_s: float) -> float:
        """How long the cable has been bad both ways without a break (0 when not bad now;
        ``None`` keeps the clock)."""
        if bad is True:
            self._bad_since.setdefault(cable, t_s)
        elif bad is False:
            self._bad_since.pop(cable, None)
        since = self._bad_since.get(cable)
        return 0.0 if since is None else t_s - since

    def is_down(self, cable: str) -> bool:
        """Whether the cable is in a down episode."""
        return self._down.get(cable, False)

    def ups(self, cable: str) -> int:
        """Times the cable came back within the window."""
        return len(self._ups.get(cable, ()))


def cables_of(view: PathView) -> dict[str, list[str]]:
    """Each cable's component name → its link-direction keys."""
    out: dict[str, list[str]] = {}
    for key, link in sorted(view.link_of_key.items()):
        out.setdefault(component("cable", link.src, link.dst), []).append(key)
    return out


def flapping_rule(ev: Evidence, view: PathView, cfg: LocaliserConfig, history: CableHistory,
                  ) -> tuple[list[Candidate], set[str]]:
    """``flapping_link``: a cable down (both directions losing ``flap_down_loss`` or more,
    and more than the gray threshold) ``flap_min_downs`` times within ``flap_window_s``,
    with a recovery in between (:class:`CableHistory`) — a cable that failed, came back
    and failed again is flapping, named as it fails the second time (confidence 0.9).

    The cable's level is read **epoch by epoch** where the evidence has the probers'
    epochs (``Evidence.path_epochs``: 1 s steps): a cable down for a second and up for a
    second shows as 100 %, 0 %, 100 % … there, where a 3 s window only ever shows a third
    or two thirds lost. When the flap's phase halves every epoch (every epoch loses about
    half), no epoch is all down or all up: a cable whose two directions lose
    ``flap_down_loss`` or more but under ``dead_loss`` in each of the last
    ``flap_fast_epochs`` epochs is flapping faster than an epoch (confidence 0.6) — a dead
    cable loses everything in every full epoch, one gray direction does not make its
    reverse lossy. Without epochs the per-evaluation window level is used, and that
    fallback needs ``dead_hold_s`` of it.

    Cables at a silent switch are not judged (the switch explains them), nor any cable
    when more than ``flap_max_bad_cable_frac`` of them are down at once (a global stall).

    Returns the candidates and the cables bad both ways now (losing the gray threshold or
    more): blackholes skip their paths."""
    threshold = gray_threshold(view, cfg)
    down_at = max(threshold, cfg.flap_down_loss)
    silent = {s for s, up in ev.switch_up.items() if up is False}
    level: dict[str, Optional[float]] = {}
    for cable, keys in cables_of(view).items():
        link = view.link_of_key[keys[0]]
        if link.src in silent or link.dst in silent or len(keys) < 2:
            level[cable] = None
            continue
        losses = [_direction_level(ev, view, k) for k in keys]
        level[cable] = None if any(x is None for x in losses) else min(x for x in losses if x is not None)
    down_now = {c for c, x in level.items() if x is not None and x >= threshold}
    if level and len(down_now) > cfg.flap_max_bad_cable_frac * len(level):
        return [], down_now
    by_epoch = bool(ev.path_epochs)
    out: list[Candidate] = []
    for cable, x in sorted(level.items()):
        keys = cables_of(view)[cable]
        if by_epoch:
            levels = [] if x is None else epoch_levels(ev, view, keys, cfg)
            downs = history.feed(cable, levels, down_at, ev.t_s)
            recent = levels[-cfg.flap_fast_epochs:] if cfg.flap_fast_epochs else []
            fast = (len(recent) == cfg.flap_fast_epochs
                    and all(down_at <= lv < cfg.dead_loss for _, _, lv in recent))
            fast_words = (f"both directions lost {pct(min(lv for _, _, lv in recent))} to "
                          f"{pct(max(lv for _, _, lv in recent))} in each of the last "
                          f"{len(recent)} epochs, never all: down and up within every epoch"
                          if fast else "")
        else:
            downs = history.update(cable, x, down_at, ev.t_s)
            bad_s = history.bad_for(cable, None if x is None else x >= threshold, ev.t_s)
            fast = (bad_s >= cfg.dead_hold_s and x is not None and down_at <= x < cfg.dead_loss)
            fast_words = (f"both directions have lost {pct(x)} or more together for {bad_s:.0f} s, "
                          "never all: down and up faster than the probe window" if fast else "")
        flapping = downs >= cfg.flap_min_downs and history.ups(cable) >= 1
        if fast and not flapping:
            view.explain([n for k in keys for n in view.crossing(k)], f"{cable} flapping")
            out.append(Candidate("flapping_link", cable, 0.6, (fast_words,), 1, 0.0))
        if flapping:
            view.explain([n for k in keys for n in view.crossing(k)], f"{cable} flapping")
            out.append(Candidate(
                "flapping_link", cable, 0.9,
                (f"went down {downs} times and came back {history.ups(cable)} times in "
                 f"{cfg.flap_window_s:.0f} s (both directions' probes lost together"
                 f"{', epoch by epoch' if by_epoch else ''})",
                 f"now {'down' if history.is_down(cable) else 'up'}, "
                 f"loss {pct(x) if x is not None else 'unknown'} both ways"),
                1, 0.0))
    return out, down_now


def epoch_levels(ev: Evidence, view: PathView, keys: Sequence[str], cfg: LocaliserConfig,
                 ) -> list[tuple[int, float, float]]:
    """A cable's level epoch by epoch, ``(epoch, end_s, level)`` oldest first: in each
    epoch, the lesser of its directions' losses, a direction's loss being the least loss
    among its measured paths that sent ``flap_epoch_min_probes`` probes or more in that
    epoch. Epochs some direction has no such path for are left out; so is everything
    when an earlier rule explains any of the paths (see :func:`_direction_level`)."""
    per_key: list[dict[int, tuple[float, float]]] = []
    for key in keys:
        crossing = view.crossing(key)
        if not crossing or any(n in view.explained for n in crossing):
            return []
        best: dict[int, tuple[float, float]] = {}
        for n in crossing:
            for c in ev.path_epochs.get(n, ()):
                if c.sent >= cfg.flap_epoch_min_probes:
                    prev = best.get(c.epoch)
                    best[c.epoch] = (c.end_s, c.loss if prev is None else min(prev[1], c.loss))
        per_key.append(best)
    common = set(per_key[0]).intersection(*per_key[1:]) if per_key else set()
    return [(e, per_key[0][e][0], min(d[e][1] for d in per_key)) for e in sorted(common)]


def _direction_level(ev: Evidence, view: PathView, key: str) -> Optional[float]:
    """A direction's loss for the flap history: the least loss of its measured paths;
    ``None`` (unknown: the history does not move) if an earlier rule explains any of them
    — a pause storm's victims are not a flap, and an explanation that comes and goes (a
    missed liveness probe) must not look like the cable going down and up; the
    tomography's estimate with no measured path."""
    crossing = view.crossing(key)
    if crossing:
        if any(n in view.explained for n in crossing):
            return None
        return direction_loss(view, key).min_loss
    est = ev.links.get(key)
    return None if est is None or est.state == "unknown" else est.loss


# ----------------------------------------------------------------------------- blackhole
def blackhole_rule(ev: Evidence, view: PathView, cfg: LocaliserConfig,
                   cables_down: set[str]) -> list[Candidate]:
    """``blackhole``: the paths towards one destination prefix that lose everything.

    For prefix P, let F be the measured, unexplained paths to P that lose at least
    ``dead_loss`` (none crossing a cable down both ways), and S the paths to P that get
    through (at most ``ok_loss``). A route is a per-prefix decision of one switch, so the
    switch that drops P must be on every path of F (the intersection of their switches)
    and on no path of S (a path to P through it that arrives shows its route works) — it
    is where the paths to P stop being explainable. Paths whose destination NIC receives
    no probe at all, or whose source NIC gets none through, are left out of F: the NIC or
    its own cable explains them as well as a route does. The switch must still forward
    something (some path through it gets through) and must answer P4Runtime. If several
    switches qualify (all sources on one leaf, no successful path to P), the most
    upstream is named with confidence 0.6 and the others listed. Where port counters
    show a link into or out of it losing frames, the link explains the paths: no verdict.

    One failing path is enough (``blackhole_min_paths``; confidence 0.2 lower): with
    paths of several prefixes over each link, a lone path that loses everything while
    every link it crosses carries another path that arrives is what only a per-prefix
    decision explains. Paths over a link whose every path is bad, towards more than one
    prefix, are the link's (a route drops one prefix): they are not in F.
    """
    ok = {n for n, f in view.paths.items() if view.measured(n) and f.drop_loss <= cfg.ok_loss}
    arriving_nics = {view.paths[n].dst_nic for n in ok}
    sending_nics = {view.paths[n].src_nic for n in ok}
    down_pairs = {(l.src, l.dst) for c in cables_down for k in cables_of(view).get(c, ())
                  for l in [view.link_of_key[k]]}
    by_link_bad: set[str] = set()        # paths a link explains: all its paths bad, many prefixes
    for key in sorted(view.by_link):
        crossing = view.crossing(key)
        if (len(crossing) >= 2 and all(view.paths[n].drop_loss > cfg.ok_loss for n in crossing)
                and len({view.paths[n].prefix for n in crossing}) > 1):
            by_link_bad.update(crossing)
    failing: dict[str, list[str]] = {}
    for n, f in view.paths.items():
        if (not view.measured(n) or n in view.explained or n in by_link_bad or f.prefix is None
                or f.drop_loss < cfg.dead_loss or f.dst_nic not in arriving_nics
                or f.src_nic not in sending_nics
                or any((l.src, l.dst) in down_pairs for l in f.links)):
            continue
        failing.setdefault(f.prefix, []).append(n)
    out: list[Candidate] = []
    for prefix, fail in sorted(failing.items()):
        if len(fail) < cfg.blackhole_min_paths:
            continue
        common = [s for s in view.paths[fail[0]].switches
                  if all(s in view.paths[n].switches for n in fail)]
        good_to_prefix = [n for n in ok if view.paths[n].prefix == prefix]
        used_ok = {s for n in good_to_prefix for s in view.paths[n].switches}
        forwarding = {s for n in ok for s in view.paths[n].switches}
        cands = [s for s in common if s not in used_ok and s in forwarding
                 and ev.switch_up.get(s) is not False]
        if not cands:
            continue
        sw = cands[0]
        link_losses = [(u, v, cl) for n in fail for l in view.paths[n].links
                       if sw in (l.src, l.dst) for u, v in [(l.src, l.dst)]
                       for cl in [counter_loss(ev, u, v)] if cl is not None and cl >= 0.5]
        if link_losses:
            continue
        words = [f"all {len(fail)} probe paths to {prefix} through {sw} lose everything "
                 f"({names(fail)})"]
        if good_to_prefix:
            words.append(f"{len(good_to_prefix)} paths to {prefix} avoiding {sw} get through "
                         f"({names(sorted(good_to_prefix))})")
        through_ok = sorted(n for n in ok if sw in view.paths[n].switches)
        words.append(f"{sw} forwards other prefixes ({names(through_ok)})")
        if len(cands) > 1:
            words.append(f"also consistent: {', '.join(cands[1:])} (named the most upstream)")
        view.explain(fail, f"route {sw} {prefix}")
        confidence = (0.9 if len(cands) == 1 and good_to_prefix else 0.6) - (0.2 if len(fail) == 1 else 0.0)
        out.append(Candidate("blackhole", component("route", sw, prefix), confidence,
                             tuple(words), cfg.min_evals, cfg.blackhole_hold_s))
    return out


def explain_route_tails(view: PathView, cfg: LocaliserConfig, routes: Sequence[str]) -> None:
    """Keep the paths of a blackhole still named (``routes``: ``"route SW PREFIX"``
    components) explained while they lose more than ``ok_loss``: once the route is
    back, the window still holds the epochs it dropped (100 %, then about 67 %, 33 %),
    and the one link direction those paths share must not be named a gray link for
    the blackhole's tail.

    >>> from monitor.evidence import Evidence, LinkDir, PathStats
    >>> ev = Evidence(0.0, paths={"p5": PathStats("p5", 3.0, 30, 18)},
    ...               path_links={"p5": (LinkDir("b0s0-eth0", "b0r0l0"), LinkDir("b0r0l0", "s1"),
    ...                                  LinkDir("s1", "b1r1l0"), LinkDir("b1r1l0", "b1s0-eth1"))},
    ...               path_dst_prefix={"p5": "10.1.1.0/24"})
    >>> v = PathView.of(ev, LocaliserConfig()); explain_route_tails(v, LocaliserConfig(), ["route s1 10.1.1.0/24"])
    >>> v.explained
    {'p5': 'the tail of route s1 10.1.1.0/24'}
    """
    for comp in routes:
        parts = comp.split()
        if len(parts) != 3 or parts[0] != "route":
            continue
        sw, prefix = parts[1], parts[2]
        tail = [n for n, f in view.paths.items() if f.prefix == prefix and sw in f.switches
                and view.measured(n) and f.drop_loss > cfg.ok_loss]
        view.explain(tail, f"the tail of {comp}")


# ----------------------------------------------------------------------------- links
def _maximal(found: dict[str, tuple[str, ...]]) -> list[str]:
    """The link keys whose bad-path sets no other key's set strictly contains; among
    equal sets, the first key (sorted) only."""
    keep = []
    for key, paths in sorted(found.items()):
        s = set(paths)
        if any(set(o) > s for k, o in found.items() if k != key):
            continue
        if any(set(o) == s for k, o in found.items() if k < key):
            continue
        keep.append(key)
    return keep


def _icrc_words(ev: Evidence, view: PathView, paths: tuple[str, ...], cfg: LocaliserConfig,
                ) -> list[str]:
    nics = sorted({view.paths[n].dst_nic for n in paths})
    return [f"{nic} counts {ev.nics[nic].icrc_errors_ps:.1f} ICRC errors/s" for nic in nics
            if nic in ev.nics and ev.nics[nic].icrc_errors_ps >= cfg.icrc_min_ps]


def corruption_rule(ev: Evidence, view: PathView, cfg: LocaliserConfig,
                    ) -> tuple[list[Candidate], set[str]]:
    """``corruption``: every measured path crossing a direction (at least
    ``gray_min_paths``) delivers ``corrupt_min_ratio`` or more of its probes with a bad
    ICRC (noise does not corrupt); the tomography's estimate and the receiving NICs' ICRC
    counters are quoted. Without a corrupted probe anywhere, a single
    NIC counting ICRC errors names its leaf's link into it (confidence 0.4).
    Returns the candidates and the corrupting link keys (gray links skip them)."""
    found: dict[str, tuple[str, ...]] = {}
    for key in sorted(view.by_link):
        crossing = view.crossing(key, unexplained=True)
        if len(crossing) < cfg.gray_min_paths:
            continue
        if min(view.paths[n].corrupt_ratio for n in crossing) < cfg.corrupt_min_ratio:
            continue
        found[key] = tuple(crossing)
    out: list[Candidate] = []
    keys = _maximal(found)
    for key in keys:
        paths = found[key]
        ratio = sum(view.paths[n].corrupted for n in paths) / sum(view.paths[n].sent for n in paths)
        words = [f"{len(paths)} probe paths over it arrive with a bad ICRC: {pct(ratio)} "
                 f"({names(paths)})"] + _icrc_words(ev, view, paths, cfg)
        est = ev.links.get(key)
        if est is not None:
            words.append(f"tomography: {est.state}, corrupt {pct(est.corrupt)}")
        view.explain(paths, f"corruption on {key}")
        out.append(Candidate("corruption", view.link_component(view.link_of_key[key]), 0.9,
                             tuple(words), cfg.min_evals, cfg.corrupt_hold_s))
    if not out and not any(f.corrupted for f in view.paths.values()):
        erring = sorted(n for n, r in ev.nics.items() if r.icrc_errors_ps >= cfg.icrc_min_ps)
        leaf = [k for k, peer in sorted(ev.port_peer.items()) if erring and peer == erring[0]]
        if len(erring) == 1 and leaf:
            nic = erring[0]
            out.append(Candidate(
                "corruption", component("link", leaf[0][0], nic), 0.4,
                (f"{nic} counts {ev.nics[nic].icrc_errors_ps:.1f} ICRC errors/s, no other NIC does",
                 "no probe arrived corrupted"), cfg.min_evals, cfg.corrupt_hold_s))
            keys = [k for k, l in view.link_of_key.items() if l.src == leaf[0][0] and l.dst == nic]
    return out, set(keys)


def _without(view: PathView, d: DirectionLoss, taken: set[str]) -> DirectionLoss:
    """``d`` without the paths another bad direction already explains."""
    paths = tuple(n for n in d.paths if n not in taken)
    if not paths:
        return DirectionLoss((), 0.0, 0.0, 0)
    facts = [view.paths[n] for n in paths]
    lost = sum(f.lost for f in facts)
    return DirectionLoss(paths, min(f.drop_loss for f in facts), lost / sum(f.sent for f in facts),
                         lost)


def _noise_explains(view: PathView, d: DirectionLoss, cfg: LocaliserConfig) -> bool:
    """Whether the probes lost on a direction's paths are plausibly noise: at the median
    path's loss rate (at least ``gray_noise_floor``), losing that many has a chance above
    ``gray_p_value``."""
    sent = sum(view.paths[n].sent for n in d.paths)
    rate = max(view.baseline_loss(), cfg.gray_noise_floor)
    return binomial_tail(d.lost, sent, rate) > cfg.gray_p_value


def gray_link_rule(ev: Evidence, view: PathView, cfg: LocaliserConfig, corrupting: set[str],
                   named: frozenset[str] = frozenset()) -> list[Candidate]:
    """``gray_link``: a direction whose unexplained measured paths (at least
    ``gray_min_paths``) *all* lose at least the gray threshold (:func:`gray_threshold`),
    ``gray_min_lost`` probes or more among them. The tomography's estimate is quoted and
    raises the confidence, but does not decide: its greedy cover, at a 2 % threshold, may
    pick another link to explain noise along with the loss.
    The loss must not be noise: at the median path's loss rate, losing that many probes
    must be less likely than ``gray_p_value`` (a binomial tail). Where both ends are
    switches with counters, the data traffic must agree: frames the sender counted and
    the receiver did not must be at least half the threshold (probes count in them too).
    Both ends must answer P4Runtime. Held ``gray_hold_s``; held ``dead_hold_s`` instead
    when the direction loses more than ``gray_max_loss`` (a window filling with a dead
    period, the start of a flap, or a blackhole whose paths have not lost everything yet)
    or when the other direction of its cable is bad too (a flap or a dead cable: held
    1.5 × ``dead_hold_s``, so that :func:`flapping_rule` speaks first). A direction already
    named keeps its verdict at half the thresholds (hysteresis: a link losing about the
    threshold is named once, not named and cleared over and over).
    Explaining away (greedy, as 007 and NetBouncer do): the direction with the most bad
    paths, then the highest least loss, is taken first and its paths are removed from the
    others' evidence — a neighbour that shares one path with a gray link and has one
    noisy path of its own is left with too few paths to blame."""
    threshold = gray_threshold(view, cfg)
    silent = {s for s, up in ev.switch_up.items() if up is False}
    keys = [k for k in sorted(view.by_link) if k not in corrupting
            and view.link_of_key[k].src not in silent and view.link_of_key[k].dst not in silent]
    taken: set[str] = set()
    chosen: list[tuple[str, DirectionLoss]] = []
    while True:
        best: Optional[tuple[tuple[int, float, float], str, DirectionLoss]] = None
        for key in keys:
            d = _without(view, direction_loss(view, key, unexplained=True), taken)
            already = view.link_component(view.link_of_key[key]) in named
            f = 0.5 if already else 1.0           # hysteresis for a direction already named
            if (len(d.paths) < cfg.gray_min_paths or d.min_loss < f * threshold
                    or d.pooled_loss < f * threshold or d.lost < f * cfg.gray_min_lost
                    or min(view.paths[n].lost for n in d.paths) < f * cfg.gray_min_lost_per_path):
                continue
            if not already and _noise_explains(view, d, cfg):
                continue
            cl = counter_loss(ev, view.link_of_key[key].src, view.link_of_key[key].dst)
            if not already and cl is not None and cl < threshold / 2:
                continue
            rank = (len(d.paths), d.min_loss, d.pooled_loss)
            if best is None or rank > best[0]:
                best = (rank, key, d)
        if best is None:
            break
        chosen.append((best[1], best[2]))
        taken |= set(best[2].paths)
        keys.remove(best[1])
    out: list[Candidate] = []
    for key, d in chosen:
        link = view.link_of_key[key]
        words = [f"{len(d.paths)} probe paths over it lose {pct(d.min_loss)} or more, "
                 f"{pct(d.pooled_loss)} pooled ({names(d.paths)})",
                 f"threshold {pct(threshold)} (median path loss {pct(view.baseline_loss())})"]
        est = ev.links.get(key)
        if est is not None:
            words.append(f"tomography: {est.state}, loss {pct(est.loss)}")
        cl = counter_loss(ev, link.src, link.dst)
        if cl is not None:
            words.append(f"port counters: {pct(cl)} of frames sent not received")
        reverse_bad = any(direction_bad(ev, view, k, threshold) for k in view.reverse_keys(key))
        hold = cfg.gray_hold_s
        if reverse_bad:
            hold = 1.5 * cfg.dead_hold_s
        if d.pooled_loss >= cfg.gray_max_loss or reverse_bad:
            hold = max(hold, cfg.dead_hold_s)
            words.append("both directions bad, and it did not come back" if reverse_bad
                         else f"losing over {pct(cfg.gray_max_loss)}, and it did not come back")
        confidence = min(0.95, 0.6 + 0.1 * (len(d.paths) - 1)
                         + (0.1 if est is not None and est.state in _BAD_STATES else 0.0)
                         + (0.1 if cl is not None and cl >= threshold / 2 else 0.0))
        out.append(Candidate("gray_link", view.link_component(link), round(confidence, 2),
                             tuple(words), cfg.min_evals, hold))
    return out


__all__ = ["CableHistory", "DirectionLoss", "blackhole_rule", "cables_of", "corruption_rule",
           "counter_loss", "direction_bad", "direction_loss", "epoch_levels", "explain_route_tails", "flapping_rule", "gray_link_rule",
           "gray_threshold"]
