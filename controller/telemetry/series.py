"""The time series of the telemetry: every polled link direction's interval samples, with
the totals, means and balance figures the reports and the story read.

>>> s = TelemetrySeries(); l = LinkId("b0r0l0", 3, "s0", "uplink")
>>> s.add(l, LinkSample(0.5, 0.5, 100, 6400, 0, 4, 0.5)); s.totals()[l]
100
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from controller.telemetry.counters import LinkId, LinkSample


@dataclass(slots=True)
class TelemetrySeries:
    """The time series of every polled link direction (the newest ``max_samples`` per link
    when set, so a long-running controller stays bounded).

    >>> s = TelemetrySeries(); l = LinkId("b0r0l0", 3, "s0", "uplink")
    >>> s.add(l, LinkSample(0.5, 0.5, 100, 6400, 0, 4, 0.5)); s.totals()[l]
    100
    """

    samples: dict[LinkId, list[LinkSample]] = field(default_factory=dict)
    max_samples: Optional[int] = None

    def add(self, link: LinkId, sample: LinkSample) -> None:
        """Append one interval of ``link``."""
        ss = self.samples.setdefault(link, [])
        ss.append(sample)
        if self.max_samples is not None and len(ss) > self.max_samples:
            del ss[: len(ss) - self.max_samples]

    def latest(self) -> dict[LinkId, LinkSample]:
        """The newest sample of every link."""
        return {l: ss[-1] for l, ss in self.samples.items() if ss}

    def links(self, kind: Optional[str] = None) -> list[LinkId]:
        """The links seen, sorted by name (only ``kind`` when given)."""
        return sorted((l for l in self.samples if kind is None or l.kind == kind),
                      key=lambda l: (l.switch, l.port))

    def totals(self, kind: Optional[str] = None) -> dict[LinkId, int]:
        """Packets sent per link over the whole series."""
        return {l: sum(s.tx_pkts for s in self.samples[l]) for l in self.links(kind)}

    def marks(self, kind: Optional[str] = None) -> dict[LinkId, int]:
        """ECN marks per link over the whole series."""
        return {l: sum(s.marks for s in self.samples[l]) for l in self.links(kind)}

    def peak_qdepth(self, kind: Optional[str] = None) -> dict[LinkId, int]:
        """Deepest queue (packets) seen per link: the largest interval ``max_qdepth``, a
        lower bound at 4-packet resolution."""
        return {l: max((s.max_qdepth for s in self.samples[l]), default=0)
                for l in self.links(kind)}

    def mean_util(self, kind: Optional[str] = None) -> dict[LinkId, float]:
        """Time-weighted mean utilisation per link."""
        out = {}
        for l in self.links(kind):
            ss = self.samples[l]
            span = sum(s.dt_s for s in ss)
            out[l] = sum(s.util * s.dt_s for s in ss) / span if span else 0.0
        return out

    def busiest(self, links: Optional[Sequence[LinkId]] = None) -> Optional[LinkId]:
        """The link (of ``links``, default all) that sent the most packets."""
        totals = self.totals()
        pool = [l for l in (links if links is not None else totals) if l in totals]
        return max(pool, key=lambda l: (totals[l], str(l)), default=None)

    def max_over_mean(self, links: Sequence[LinkId]) -> float:
        """Busiest link's packets ÷ the mean over ``links`` (1.0 = perfectly balanced).

        >>> s = TelemetrySeries(); a = LinkId("l", 1, "s0", "uplink"); b = LinkId("l", 2, "s1", "uplink")
        >>> s.add(a, LinkSample(1, 1, 300, 0, 0, 0, 0)); s.add(b, LinkSample(1, 1, 100, 0, 0, 0, 0))
        >>> s.max_over_mean([a, b])
        1.5
        """
        totals = self.totals()
        vals = [totals.get(l, 0) for l in links]
        mean = sum(vals) / len(vals) if vals else 0.0
        return max(vals) / mean if mean else 0.0

    def times(self) -> list[float]:
        """Sample end times of the longest link series."""
        longest = max(self.samples.values(), key=len, default=[])
        return [s.t_s for s in longest]

__all__ = ["TelemetrySeries"]
