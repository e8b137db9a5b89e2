"""Elephant flows from sampled digests: a flow table keyed by 5-tuple with rate estimates.

The switches send digest ``flow_sample_t`` for 1 in N packets on ports where GOR turned
sampling on (``FabricIngress.sampling.config``). Fields, in order: ``switch_id`` 32,
``src_addr`` 32, ``dst_addr`` 32, ``protocol`` 8, ``src_port`` 16, ``dst_port`` 16,
``ingress_port`` 9, ``egress_port`` 9, ``qdepth`` 32, ``packet_length`` 32.

Rate estimate of a flow on one link (switch, egress port), over the last ``window_s``::

    rate_bps = Σ sampled packet_length × 8 × one_in_n / window_s

i.e. sample count × 1/sampling probability × mean bytes / window. A flow not sampled
for ``max_age_s`` is dropped (:meth:`FlowTable.age`). A malformed sample (wrong field
count, a value that does not fit its width, an unknown switch id, a zero length) is
counted in :attr:`FlowTable.malformed` and ignored.

Example::

    >>> t = FlowTable({1: "b0r0l0"}, one_in_n=100, window_s=1.0)
    >>> raw = [1, 0x0A000001, 0x0A010001, 17, 49152, 4791, 1, 3, 12, 1000]
    >>> for i in range(5): _ = t.add(raw, t_s=0.1 * i)
    >>> e = t.top(1, ("b0r0l0", 3), t_s=0.5)[0]
    >>> (str(e.flow), e.rate_bps)
    ('10.0.0.1:49152->10.1.0.1:4791/17', 4000000.0)
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence, Union

from controller.gor.decisions import FlowKey, LinkKey

DIGEST_FIELDS: tuple[tuple[str, int], ...] = (
    ("switch_id", 32), ("src_addr", 32), ("dst_addr", 32), ("protocol", 8), ("src_port", 16),
    ("dst_port", 16), ("ingress_port", 9), ("egress_port", 9), ("qdepth", 32), ("packet_length", 32))


class MalformedSample(ValueError):
    """A digest that cannot be a ``flow_sample_t``; the message says why."""


@dataclass(frozen=True, slots=True)
class FlowSample:
    """One decoded ``flow_sample_t`` digest (addresses as integers).

    >>> FlowSample.from_digest([1, 1, 2, 17, 5, 6, 1, 3, 0, 100]).egress_port
    3
    """

    switch_id: int
    src_addr: int
    dst_addr: int
    protocol: int
    src_port: int
    dst_port: int
    ingress_port: int
    egress_port: int
    qdepth: int
    packet_length: int

    @classmethod
    def from_digest(cls, values: Union[Sequence[int], Mapping[str, int]]) -> "FlowSample":
        """Validate the digest's values (in field order, or by field name)."""
        if isinstance(values, Mapping):
            missing = [n for n, _ in DIGEST_FIELDS if n not in values]
            if missing:
                raise MalformedSample(f"missing field {missing[0]}")
            seq = [values[n] for n, _ in DIGEST_FIELDS]
        else:
            seq = list(values)
            if len(seq) != len(DIGEST_FIELDS):
                raise MalformedSample(f"{len(seq)} fields, expected {len(DIGEST_FIELDS)}")
        for (name, width), v in zip(DIGEST_FIELDS, seq):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 1 << width:
                raise MalformedSample(f"{name}={v!r} does not fit bit<{width}>")
        sample = cls(*seq)
        if sample.packet_length == 0:
            raise MalformedSample("packet_length 0")
        return sample

    @property
    def flow(self) -> FlowKey:
        """The 5-tuple."""
        return FlowKey.of_ints(self.src_addr, self.dst_addr, self.protocol, self.src_port,
                               self.dst_port)


@dataclass(frozen=True, slots=True)
class Elephant:
    """A flow's rate estimate on one link: ``Elephant(flow, ("s0", 1), 2e9, 12, 3.5)``."""

    flow: FlowKey
    link: LinkKey
    rate_bps: float
    samples: int
    last_seen_s: float


@dataclass(slots=True)
class _FlowLink:
    samples: deque[tuple[float, int]] = field(default_factory=deque)   # (t_s, bytes)
    last_seen_s: float = 0.0
    max_qdepth: int = 0


class FlowTable:
    """Flows by 5-tuple and link, fed by digests; rates over a sliding window.

    ``switch_names`` maps digest switch ids to switch names (an id not in it is a
    malformed sample); ``one_in_n`` is the sampling ratio (int for every port, or a
    mapping ``LinkKey → N`` with :meth:`set_sampling` for per-port settings).
    """

    def __init__(self, switch_names: Mapping[int, str], one_in_n: int = 1000,
                 window_s: float = 1.0, max_age_s: float = 5.0) -> None:
        if one_in_n < 1 or window_s <= 0 or max_age_s <= 0:
            raise ValueError("one_in_n ≥ 1, window_s > 0 and max_age_s > 0 are required")
        self.switch_names = dict(switch_names)
        self.default_one_in_n = one_in_n
        self.one_in_n: dict[LinkKey, int] = {}
        self.window_s = window_s
        self.max_age_s = max_age_s
        self.flows: dict[FlowKey, dict[LinkKey, _FlowLink]] = {}
        self.malformed = 0
        self.last_error = ""

    def set_sampling(self, link: LinkKey, one_in_n: int) -> None:
        """Record the ratio programmed on ``link`` (``sampling.sample(one_in_n)``)."""
        if one_in_n < 1:
            raise ValueError("one_in_n must be at least 1")
        self.one_in_n[link] = one_in_n

    def add(self, digest: Union[FlowSample, Sequence[int], Mapping[str, int]], t_s: float) -> Optional[FlowSample]:
        """Take one digest received at ``t_s``; returns the sample, None when malformed."""
        try:
            s = digest if isinstance(digest, FlowSample) else FlowSample.from_digest(digest)
            name = self.switch_names.get(s.switch_id)
            if name is None:
                raise MalformedSample(f"unknown switch id {s.switch_id}")
        except MalformedSample as exc:
            self.malformed += 1
            self.last_error = str(exc)
            return None
        link = (name, s.egress_port)
        fl = self.flows.setdefault(s.flow, {}).setdefault(link, _FlowLink())
        fl.samples.append((t_s, s.packet_length))
        fl.last_seen_s = max(fl.last_seen_s, t_s)
        fl.max_qdepth = max(fl.max_qdepth, s.qdepth)
        return s

    def _rate(self, link: LinkKey, fl: _FlowLink, t_s: float) -> tuple[float, int]:
        lo = t_s - self.window_s
        while fl.samples and fl.samples[0][0] < lo:
            fl.samples.popleft()
        n = self.one_in_n.get(link, self.default_one_in_n)
        nbytes = sum(b for t, b in fl.samples if t <= t_s)
        return nbytes * 8.0 * n / self.window_s, len(fl.samples)

    def rate_bps(self, flow: FlowKey, link: LinkKey, t_s: float) -> float:
        """The estimated rate of ``flow`` on ``link`` over the window ending at ``t_s``."""
        fl = self.flows.get(flow, {}).get(link)
        return self._rate(link, fl, t_s)[0] if fl else 0.0

    def age(self, t_s: float) -> int:
        """Drop flow/link entries unseen for ``max_age_s``; returns how many were dropped."""
        dropped = 0
        for flow in list(self.flows):
            links = self.flows[flow]
            for link in [k for k, fl in links.items() if t_s - fl.last_seen_s > self.max_age_s]:
                del links[link]
                dropped += 1
            if not links:
                del self.flows[flow]
        return dropped

    def top(self, n: int, link: Optional[LinkKey], t_s: float) -> list[Elephant]:
        """The ``n`` fastest flows on ``link`` (all links when None: each flow once, at its
        fastest link), fastest first; ties by 5-tuple."""
        out: list[Elephant] = []
        for flow, links in self.flows.items():
            best: Optional[Elephant] = None
            for lk, fl in links.items():
                if link is not None and lk != link:
                    continue
                rate, count = self._rate(lk, fl, t_s)
                if count and (best is None or rate > best.rate_bps):
                    best = Elephant(flow, lk, rate, count, fl.last_seen_s)
            if best is not None:
                out.append(best)
        out.sort(key=lambda e: (-e.rate_bps, e.flow))
        return out[:max(n, 0)]

    def samples_on(self, link: LinkKey, t_s: float) -> dict[FlowKey, int]:
        """Samples per flow on ``link`` in the window ending at ``t_s`` (each flow's share
        of the link's packets is its count over the total).

        >>> t = FlowTable({1: "l"}); _ = t.add([1, 1, 2, 17, 5, 6, 1, 3, 0, 100], 0.0)
        >>> list(t.samples_on(("l", 3), 0.5).values())
        [1]
        """
        out: dict[FlowKey, int] = {}
        for flow, links in self.flows.items():
            fl = links.get(link)
            if fl is not None:
                n = self._rate(link, fl, t_s)[1]
                if n:
                    out[flow] = n
        return out

    def last_seen(self, flow: FlowKey, link: LinkKey) -> Optional[float]:
        """When ``flow`` was last sampled on ``link`` (None: never, or aged out).

        >>> t = FlowTable({1: "l"}); s = t.add([1, 1, 2, 17, 5, 6, 1, 3, 0, 100], 0.25)
        >>> t.last_seen(s.flow, ("l", 3)), t.last_seen(s.flow, ("l", 4))
        (0.25, None)
        """
        fl = self.flows.get(flow, {}).get(link)
        return None if fl is None else fl.last_seen_s

    def seen_since(self, flow: FlowKey, link: LinkKey, t_s: float) -> bool:
        """True when ``flow`` was sampled on ``link`` at or after ``t_s``."""
        fl = self.flows.get(flow, {}).get(link)
        return fl is not None and fl.last_seen_s >= t_s

    def __len__(self) -> int:
        return len(self.flows)


__all__ = ["DIGEST_FIELDS", "Elephant", "FlowSample", "FlowTable", "MalformedSample"]
