"""The localiser's thresholds (:class:`LocaliserConfig`), the candidate verdicts its
rules return (:class:`Candidate`), and its view of the probe paths (:class:`PathView`):
each path's links, end NICs, switches crossed and counts, indexed by link direction,
with the paths an earlier rule has explained. The rules are in :mod:`monitor.rules`
(whole nodes) and :mod:`monitor.linkrules` (links); :mod:`monitor.localiser` runs them.

A rule reads one :class:`~monitor.evidence.Evidence` and returns :class:`Candidate`
verdicts: a fault kind, the component, a confidence, the evidence in words, and how long
it must persist before it is named (``hold_evals`` evaluations *and* ``hold_s`` seconds).
A rule that explains probe paths (a hung switch explains every path through it)
records that in the :class:`PathView`, so the rules run after it do not blame the
links of those paths.

>>> nic_host("b0s1-eth0"), nic_host("s0")
('b0s1', None)
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Iterable, Optional

from monitor.evidence import Evidence, LinkDir, component

_NIC_RE = re.compile(r"^(?P<host>.+)-eth(?P<rail>\d+)(?:p(?P<port>\d+))?$")


@dataclass(frozen=True, slots=True)
class LocaliserConfig:
    """Thresholds of the rules (rates per second, durations in seconds, losses as
    fractions). The defaults are sized for the testbed: 10 probes/s per path over a 3 s
    window (30 probes), a loaded CPU that loses a few % of probes in bursts, evaluations
    every 0.5–1 s.

    >>> LocaliserConfig().gray_min_loss
    0.1
    """

    min_path_probes: int = 10          # a path with fewer probes sent says nothing
    gray_min_loss: float = 0.10        # pooled loss of a link's paths to call it lossy ...
    gray_excess_loss: float = 0.06     # ... and this much above the median path's loss
    gray_min_lost: int = 6             # probes lost on the link's paths, at least ...
    gray_min_lost_per_path: int = 3    # ... and on each of them
    gray_p_value: float = 1e-4         # noise at the median path's rate must not explain it
    gray_noise_floor: float = 0.01     # the least noise rate assumed
    gray_min_paths: int = 2            # paths crossing a link needed to blame it
    gray_hold_s: float = 2.5
    gray_max_loss: float = 0.5         # more than this: held like a dead link (ramping up?)
    dead_loss: float = 0.9             # a path losing this much "loses everything"
    dead_hold_s: float = 10.0          # a dead direction / both directions bad: wait for a flap
    ok_loss: float = 0.2               # a path losing at most this much gets through
    corrupt_min_ratio: float = 0.02    # bad-ICRC probes per probe sent, every path of the link
    corrupt_hold_s: float = 1.5
    icrc_min_ps: float = 1.0           # NIC ICRC errors per second that count
    flap_window_s: float = 20.0
    flap_min_downs: int = 2            # cable down, up, down again within the window
    flap_down_loss: float = 0.3        # both directions losing this much: the cable is down
    flap_up_frac: float = 0.6          # back up when the loss falls to this share of its peak
    flap_max_bad_cable_frac: float = 0.5   # more cables bad at once: a global event, not flaps
    flap_epoch_min_probes: int = 5     # a path's epoch counts for the flap rule with this many
    flap_fast_epochs: int = 4          # epochs in a row each losing down..dead both ways: a fast flap
    hung_evals: int = 3                # evaluations with P4Runtime silent before naming
    hung_hold_s: float = 1.5
    hung_path_loss: float = 0.5        # every path through the switch loses this much more
    hung_memory_s: float = 6.0         # how far back a silent switch's path loss counts ...
    hung_peak_loss: float = 0.2        # ... and how much more than the others it must have been
    blackhole_min_paths: int = 1
    blackhole_hold_s: float = 1.5
    pause_min_fps: float = 10.0        # PAUSE frames per second that make a NIC "pausing" (a
                                       # stalled emulated NIC refreshes its PAUSE every 50 ms: 20/s)
    slow_max_goodput_mbps: float = 1.0  # "delivers ~nothing"
    slow_hold_s: float = 2.0
    ecn_min_tx_pps: float = 10.0       # probes alone give every link ~20 pkt/s
    ecn_high_mark_ratio: float = 0.3
    ecn_quiet_mark_ratio: float = 0.05
    ecn_low_queue_frac: float = 0.75   # max queue depth below this fraction of the threshold
    ecn_hold_s: float = 2.0
    agent_max_age_s: float = 5.0
    agent_grace_s: float = 10.0        # after the controller is back, agents re-register
    controller_evals: int = 3
    controller_hold_s: float = 1.5
    min_evals: int = 3                 # any verdict: present in this many evaluations
    grace_evals: int = 1               # a pending verdict survives this many misses
    clear_s: float = 5.0               # absent this long: the fault is over

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if value < 0:
                raise ValueError(f"localiser config: {name} must not be negative (got {value})")
        if not 0.0 < self.flap_up_frac < 1.0:
            raise ValueError(f"localiser config: flap_up_frac must be in (0, 1) "
                             f"(got {self.flap_up_frac})")
        if not self.ok_loss < self.dead_loss <= 1.0:
            raise ValueError(f"localiser config: need ok_loss < dead_loss <= 1 "
                             f"(got {self.ok_loss}, {self.dead_loss})")


@dataclass(frozen=True, slots=True)
class Candidate:
    """A verdict a rule would give if it persists: ``hold_evals`` evaluations in a row
    and ``hold_s`` seconds since first seen.

    >>> Candidate("dead_agent", "agent b0s0", 0.9, ("age 7.0 s",), 2, 0.0).kind
    'dead_agent'
    """

    kind: str
    component: str
    confidence: float
    evidence: tuple[str, ...]
    hold_evals: int
    hold_s: float


def nic_host(node: str) -> Optional[str]:
    """The host of a NIC (port) name, ``None`` for a switch: ``nic_host("b0s1-eth0") ==
    nic_host("b0s1-eth0p1") == "b0s1"``."""
    m = _NIC_RE.match(node)
    return m.group("host") if m else None


def pct(x: float) -> str:
    """A fraction as a percentage: ``pct(0.125) == '12.5%'``."""
    return f"{100 * x:.1f}%".replace(".0%", "%")


def names(items: Iterable[str], most: int = 4) -> str:
    """At most ``most`` names, then how many more: ``names("abcde", 2) == 'a, b +3 more'``."""
    items = list(items)
    head = ", ".join(items[:most])
    return head + (f" +{len(items) - most} more" if len(items) > most else "")


@dataclass(frozen=True, slots=True)
class PathFacts:
    """One probe path as the rules see it: its links, end NICs, the switches it crosses
    (in path order), destination prefix and the window's counts."""

    name: str
    links: tuple[LinkDir, ...]
    src_nic: str
    dst_nic: str
    switches: tuple[str, ...]
    prefix: Optional[str]
    sent: int
    received: int
    corrupted: int

    @property
    def drop_loss(self) -> float:
        """Probes that never arrived (bad-ICRC ones arrived: they are not drops)."""
        if self.sent <= 0:
            return 0.0
        return max(0.0, min(1.0, (self.sent - self.received - self.corrupted) / self.sent))

    @property
    def lost(self) -> int:
        """Probes that never arrived."""
        return max(0, self.sent - self.received - self.corrupted)

    @property
    def corrupt_ratio(self) -> float:
        """Probes that arrived with a bad ICRC, per probe sent."""
        return self.corrupted / self.sent if self.sent > 0 else 0.0


@dataclass(slots=True)
class PathView:
    """The probe paths of one evidence snapshot, indexed by link, with the paths already
    explained by a more specific fault (``explained``: path → why).

    >>> from monitor.evidence import PathStats
    >>> ev = Evidence(0.0, paths={"p0": PathStats("p0", 3.0, 30, 30)},
    ...               path_links={"p0": (LinkDir("b0s0-eth0", "b0r0l0"), LinkDir("b0r0l0", "s0"),
    ...                                  LinkDir("s0", "b1r0l0"), LinkDir("b1r0l0", "b1s0-eth0"))})
    >>> v = PathView.of(ev, LocaliserConfig())
    >>> v.paths["p0"].switches, v.crossing("b0r0l0->s0")
    (('b0r0l0', 's0', 'b1r0l0'), ['p0'])
    """

    paths: dict[str, PathFacts]
    min_probes: int
    by_link: dict[str, list[str]] = field(default_factory=dict)
    explained: dict[str, str] = field(default_factory=dict)
    link_of_key: dict[str, LinkDir] = field(default_factory=dict)
    _parallel: set[tuple[str, str]] = field(default_factory=set)

    @classmethod
    def of(cls, ev: Evidence, cfg: LocaliserConfig) -> "PathView":
        """The view of ``ev``'s paths (paths without statistics count as nothing sent)."""
        facts: dict[str, PathFacts] = {}
        for name in sorted(ev.path_links):
            links = tuple(ev.path_links[name])
            if not links:
                continue
            nodes = [links[0].src] + [l.dst for l in links]
            switches = tuple(n for n in nodes[1:-1] if nic_host(n) is None)
            st = ev.paths.get(name)
            facts[name] = PathFacts(name, links, nodes[0], nodes[-1], switches,
                                    ev.path_dst_prefix.get(name), st.sent if st else 0,
                                    st.received if st else 0, st.corrupted if st else 0)
        view = cls(facts, cfg.min_path_probes)
        ports: dict[tuple[str, str], set[Optional[int]]] = {}
        for f in facts.values():
            for link in f.links:
                key = str(link)
                view.by_link.setdefault(key, []).append(f.name)
                view.link_of_key[key] = link
                ports.setdefault((link.src, link.dst), set()).add(link.src_port)
        for key in ev.links:
            if key not in view.link_of_key:
                try:
                    link = LinkDir.parse(key)
                except ValueError:
                    continue
                view.link_of_key[key] = link
                ports.setdefault((link.src, link.dst), set()).add(link.src_port)
        view._parallel = {pair for pair, p in ports.items() if len(p) > 1}
        return view

    def measured(self, name: str) -> bool:
        """Whether path ``name`` sent enough probes in the window to be judged."""
        return self.paths[name].sent >= self.min_probes

    def crossing(self, link_key: str, *, unexplained: bool = False) -> list[str]:
        """The measured paths crossing a link direction (only those not explained)."""
        return [n for n in self.by_link.get(link_key, ()) if self.measured(n)
                and not (unexplained and n in self.explained)]

    def through(self, switch: str) -> list[str]:
        """The measured paths crossing ``switch``."""
        return [n for n, f in self.paths.items() if switch in f.switches and self.measured(n)]

    def explain(self, path_names: Iterable[str], why: str) -> None:
        """Mark paths as explained (the first explanation stays)."""
        for n in path_names:
            self.explained.setdefault(n, why)

    def baseline_loss(self) -> float:
        """The median drop loss of the measured paths: what noise costs every path now."""
        losses = [f.drop_loss for n, f in self.paths.items() if self.measured(n)]
        return statistics.median(losses) if losses else 0.0

    def link_component(self, link: LinkDir) -> str:
        """``link A->B``, with the sending port only where parallel links need it."""
        src = f"{link.src}:{link.src_port}" if ((link.src, link.dst) in self._parallel
                                                and link.src_port is not None) else link.src
        return component("link", src, link.dst)

    def reverse_keys(self, link_key: str) -> list[str]:
        """The keys of the other direction(s) of a link direction's cable."""
        link = self.link_of_key[link_key]
        return sorted(k for k, l in self.link_of_key.items()
                      if l.src == link.dst and l.dst == link.src)


__all__ = ["Candidate", "LocaliserConfig", "PathFacts", "PathView", "names", "nic_host", "pct"]
