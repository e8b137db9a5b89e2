"""Link-level tomography from the probe paths: which link directions lose or corrupt
probes, and how much (boolean tomography in the manner of NetBouncer and 007).

Input: the plan's :class:`~monitor.evidence.ProbePath` records (their predicted links)
and each path's :class:`~monitor.evidence.PathStats` over one window. Output: a
:class:`~monitor.evidence.LinkEstimate` per link direction, keyed ``str(LinkDir)``.

The rules (thresholds in :class:`Thresholds`, all deterministic):

1. A path is **measured** when it sent at least ``min_probes`` probes in the window;
   links crossed by no measured path are ``unknown``.
2. Two ratios per path: *drop* = probes that never arrived, ``1 − (received +
   corrupted) / sent``, and *corrupt* = ``corrupted / sent`` (a frame with a bad ICRC did
   cross the links). A path is *drop-bad* when its drop ratio exceeds ``loss_threshold``
   and it lost at least ``min_lost`` probes; *corrupt-bad* when its corrupt ratio exceeds
   ``corrupt_threshold``.
3. For each kind separately: a link is a *suspect* when at least ``bad_share`` of its
   measured paths are bad. Greedy cover: take the suspect explaining the most bad paths
   not yet explained (ties: the larger bad share, then the name), until every bad path is
   explained or no suspect explains one; then drop, latest first, a culprit whose bad
   paths the others explain. The planner gives each link two paths sharing nothing else,
   so with one bad link every other link of its paths is crossed by a good path and the
   culprit is named alone.
4. A culprit's ratio is estimated from its measured paths that cross no other culprit
   (the good-path-explained residual), else from all its paths with the other culprits'
   estimates divided out. Its state: ``dead`` when those paths received nothing at all,
   ``corrupting`` for a corruption culprit, ``lossy`` for a drop culprit. Any other
   measured link is ``ok``; its ``loss`` is then the smallest drop ratio of its paths
   (an upper bound: no link loses more than its best path).

Example::

    >>> from monitor.evidence import LinkDir, PathStats, ProbePath
    >>> L = LinkDir.parse
    >>> paths = [ProbePath("a", "x", "y", "", "", 1, (L("x->l"), L("l->s"))),
    ...          ProbePath("b", "x", "z", "", "", 2, (L("x->l"), L("l->t"))),
    ...          ProbePath("c", "w", "y", "", "", 3, (L("w->l"), L("l->s")))]
    >>> stats = {"a": PathStats("a", 2.0, 100, 80), "b": PathStats("b", 2.0, 100, 100),
    ...          "c": PathStats("c", 2.0, 100, 80)}
    >>> est = estimate(paths, stats)
    >>> est["l->s"].state, round(est["l->s"].loss, 2), est["x->l"].state
    ('lossy', 0.2, 'ok')
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Optional, Sequence

from monitor.evidence import LinkDir, LinkEstimate, PathStats, ProbePath


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The tomography's thresholds (module docstring, rules 1–3).

    * ``min_probes``: probes a path must have sent in the window to count (10: one
      second at the default 10 pps);
    * ``loss_threshold``: drop ratio above which a path is bad (2 %);
    * ``min_lost``: probes a bad path must have lost (1: with ≥ 10 probes, 2 % is 1);
    * ``corrupt_threshold``: corrupt ratio above which a path is corrupt-bad (0: one
      bad ICRC is already a fault — nothing on a healthy fabric corrupts frames);
    * ``bad_share``: share of a link's measured paths that must be bad for it to be a
      suspect (0.5: of two paths, one may look good by chance at low loss);
    * ``dead_received``: a culprit whose paths received at most this many probes, good
      or corrupted, is dead (0).

    >>> Thresholds().min_probes
    10
    """

    min_probes: int = 10
    loss_threshold: float = 0.02
    min_lost: int = 1
    corrupt_threshold: float = 0.0
    bad_share: float = 0.5
    dead_received: int = 0


def _drop(s: PathStats) -> float:
    return max(0.0, min(1.0, 1.0 - (s.received + s.corrupted) / s.sent))


def _corrupt(s: PathStats) -> float:
    return max(0.0, min(1.0, s.corrupted / s.sent))


def _culprits(by_link: Mapping[LinkDir, list[str]], bad: set[str],
              share: float) -> list[LinkDir]:
    """Greedy cover of the bad paths by suspect links, then pruned (rule 3)."""
    suspects = {l: [p for p in ps if p in bad] for l, ps in by_link.items()}
    suspects = {l: b for l, b in suspects.items() if b and len(b) / len(by_link[l]) >= share}
    unexplained = set(bad)
    chosen: list[LinkDir] = []
    while unexplained:
        best: Optional[tuple[tuple[int, float, str], LinkDir]] = None
        for l, b in suspects.items():
            if l in chosen:
                continue
            n = sum(1 for p in b if p in unexplained)
            if n == 0:
                continue
            key = (n, len(b) / len(by_link[l]), _neg(str(l)))
            if best is None or key > best[0]:
                best = (key, l)
        if best is None:
            break
        chosen.append(best[1])
        unexplained -= set(suspects[best[1]])
    for l in reversed(list(chosen)):
        others = set().union(*(suspects[m] for m in chosen if m != l)) if len(chosen) > 1 else set()
        if set(suspects[l]) <= others:
            chosen.remove(l)
    return chosen


def _neg(text: str) -> str:
    """A key that sorts names in reverse (so that ``max`` prefers the first name)."""
    return "".join(chr(0x10FFFF - ord(c)) for c in text)


def _ratio(l: LinkDir, culprits: Sequence[LinkDir], by_link: Mapping[LinkDir, list[str]],
           path_links: Mapping[str, frozenset[LinkDir]], stats: Mapping[str, PathStats],
           ratio_of: Callable[[PathStats], float], done: Mapping[LinkDir, float]) -> tuple[float, int]:
    """A culprit's ratio (rule 4) and how many probes its own paths received."""
    others = set(culprits) - {l}
    own = [p for p in by_link[l] if not (path_links[p] & others)]
    if own:
        sent = sum(stats[p].sent for p in own)
        kept = sum(stats[p].sent * (1.0 - ratio_of(stats[p])) for p in own)
        got = sum(stats[p].received + stats[p].corrupted for p in own)
        return max(0.0, min(1.0, 1.0 - kept / sent)), got
    vals = []
    for p in by_link[l]:
        t = 1.0 - ratio_of(stats[p])
        for m in path_links[p] & others:
            t_m = 1.0 - done.get(m, 0.0)
            t = t / t_m if t_m > 0 else 1.0
        vals.append(1.0 - min(1.0, t))
    got = sum(stats[p].received + stats[p].corrupted for p in by_link[l])
    return max(0.0, min(1.0, sum(vals) / len(vals))), got


def estimate(paths: Sequence[ProbePath], stats: Mapping[str, PathStats],
             thresholds: Thresholds = Thresholds(),
             links: Iterable[LinkDir] = ()) -> dict[str, LinkEstimate]:
    """The estimate of every link direction the paths cross (and of ``links``, e.g.
    :func:`monitor.probes.fabric_links`, reported ``unknown`` when no path crosses them),
    keyed ``str(LinkDir)``, in the rules of the module docstring.

    >>> from monitor.evidence import ProbePath, PathStats
    >>> p = ProbePath("a", "x", "y", "", "", 1, (LinkDir("x", "l"),))
    >>> estimate([p], {"a": PathStats("a", 1.0, 3, 3)})["x->l"].state     # too few probes
    'unknown'
    """
    t = thresholds
    path_links = {p.name: frozenset(p.links) for p in paths}
    measured = {p.name for p in paths if p.name in stats and stats[p.name].sent >= t.min_probes}
    by_link: dict[LinkDir, list[str]] = defaultdict(list)
    for p in paths:
        if p.name in measured:
            for l in dict.fromkeys(p.links):
                by_link[l].append(p.name)
    drop_bad = {p for p in measured
                if _drop(stats[p]) > t.loss_threshold
                and stats[p].sent - stats[p].received - stats[p].corrupted >= t.min_lost}
    corrupt_bad = {p for p in measured if _corrupt(stats[p]) > t.corrupt_threshold}
    drop_culprits = _culprits(by_link, drop_bad, t.bad_share)
    corrupt_culprits = _culprits(by_link, corrupt_bad, t.bad_share)
    drop_est: dict[LinkDir, float] = {}
    drop_got: dict[LinkDir, int] = {}
    for l in drop_culprits:
        drop_est[l], drop_got[l] = _ratio(l, drop_culprits, by_link, path_links, stats, _drop,
                                          drop_est)
    corrupt_est: dict[LinkDir, float] = {}
    for l in corrupt_culprits:
        corrupt_est[l], _ = _ratio(l, corrupt_culprits, by_link, path_links, stats, _corrupt,
                                   corrupt_est)
    every = list(dict.fromkeys([*links, *(l for p in paths for l in p.links)]))
    out: dict[str, LinkEstimate] = {}
    for l in every:
        ps = by_link.get(l, [])
        n_bad = sum(1 for p in ps if p in drop_bad or p in corrupt_bad)
        if not ps:
            out[str(l)] = LinkEstimate(l, "unknown", 0.0, 0.0, 0, 0)
        elif l in drop_est and drop_got[l] <= t.dead_received:
            out[str(l)] = LinkEstimate(l, "dead", 1.0, corrupt_est.get(l, 0.0), len(ps), n_bad)
        elif l in corrupt_est:
            out[str(l)] = LinkEstimate(l, "corrupting", drop_est.get(l, 0.0), corrupt_est[l],
                                       len(ps), n_bad)
        elif l in drop_est:
            out[str(l)] = LinkEstimate(l, "lossy", drop_est[l], 0.0, len(ps), n_bad)
        else:
            out[str(l)] = LinkEstimate(l, "ok", min(_drop(stats[p]) for p in ps),
                                       min(_corrupt(stats[p]) for p in ps), len(ps), n_bad)
    return out


def bad_links(estimates: Mapping[str, LinkEstimate]) -> dict[str, LinkEstimate]:
    """The estimates whose state is neither ``ok`` nor ``unknown``.

    >>> bad_links({"a->b": LinkEstimate(LinkDir("a", "b"), "ok", 0.0, 0.0, 2, 0)})
    {}
    """
    return {k: e for k, e in estimates.items() if e.state not in ("ok", "unknown")}


__all__ = ["Thresholds", "bad_links", "estimate"]
