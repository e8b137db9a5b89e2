"""DCQCN (Zhu et al., SIGCOMM 2015) as two pure state machines with an injected clock.

* :class:`NotificationPoint` — the receiver: on a CE-marked packet it asks for a CNP, at most
  one per flow per ``cnp_interval_s``.
* :class:`ReactionPoint` — the sender: on a CNP, ``Rt = Rc``, ``Rc = Rc·(1 − α/2)``,
  ``α = (1 − g)·α + g``; without CNPs α decays as ``α = (1 − g)·α`` every ``alpha_timer_s``;
  the rate rises on each expiry of the rate timer (``rate_timer_s``) and each
  ``byte_counter_pkts`` packets sent: fast recovery ``Rc = (Rt + Rc)/2`` while both event
  counters are below ``fast_recovery_rounds`` (5), additive increase ``Rt += R_AI`` once one
  of them reaches it, hyper increase ``Rt += i·R_HAI`` once both exceed it (``i`` = how far
  the smaller one is past it), each followed by ``Rc = (Rt + Rc)/2``.

Emulation scale (:class:`DcqcnParams` defaults). Hardware runs at millions of packets per
second; an emulated NIC at thousands. Times are therefore stretched 100×: the paper's
50 µs CNP interval becomes 5 ms, the 55 µs α and rate timers 5.5 ms. Rates are in packets
per second: line rate 5,000 pps, R_AI = 0.5 % and R_HAI = 5 % of it (the paper's 40 Mb/s
at 40 Gb/s is 0.1 %; raised so that recovery from a halving takes about a second rather
than half a minute of emulated time), byte counter 100 packets (the timer dominates, as it
does in hardware with B = 10 MB). ``g`` = 1/256 and 5 fast-recovery rounds are the paper's.

>>> rp = ReactionPoint(DcqcnParams(line_rate_pps=1000))
>>> rp.on_cnp(now=0.0); rp.rate_pps
500.0
>>> rp.advance(0.0055); rp.rate_pps      # one timer expiry: fast recovery halfway back
750.0
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Hashable

DEFAULT_CNP_INTERVAL_S = 0.005


@dataclass(frozen=True, slots=True)
class DcqcnParams:
    """DCQCN knobs at emulation scale (see the module docstring for the scaling).

    >>> DcqcnParams().cnp_interval_s
    0.005
    """

    line_rate_pps: float = 5000.0
    min_rate_pps: float = 10.0
    g: float = 1.0 / 256
    alpha_init: float = 1.0
    alpha_timer_s: float = 0.0055
    rate_timer_s: float = 0.0055
    byte_counter_pkts: int = 100
    fast_recovery_rounds: int = 5
    ai_rate_pps: float = 25.0
    hai_rate_pps: float = 250.0
    cnp_interval_s: float = DEFAULT_CNP_INTERVAL_S
    min_decrease_interval_s: float = 0.0

    def __post_init__(self) -> None:
        if not 0 < self.min_rate_pps <= self.line_rate_pps:
            raise ValueError("need 0 < min_rate_pps <= line_rate_pps")
        if not 0 < self.g <= 1 or self.alpha_timer_s <= 0 or self.rate_timer_s <= 0:
            raise ValueError("g must be in (0, 1] and timers positive")
        if self.byte_counter_pkts <= 0 or self.fast_recovery_rounds <= 0:
            raise ValueError("byte_counter_pkts and fast_recovery_rounds must be positive")

    @classmethod
    def scaled(cls, line_rate_pps: float, **overrides: float) -> "DcqcnParams":
        """Defaults for another line rate: min rate, R_AI and R_HAI keep their proportions.

        >>> DcqcnParams.scaled(10000).ai_rate_pps
        50.0
        """
        base = cls()
        k = line_rate_pps / base.line_rate_pps
        values: dict[str, float] = dict(line_rate_pps=line_rate_pps,
                                        min_rate_pps=base.min_rate_pps * k,
                                        ai_rate_pps=base.ai_rate_pps * k,
                                        hai_rate_pps=base.hai_rate_pps * k)
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]


@dataclass(slots=True)
class NotificationPoint:
    """Receiver side: which CE-marked packets trigger a CNP (one per flow per interval).

    >>> np_ = NotificationPoint(0.005)
    >>> [np_.on_packet("f", ce, t) for ce, t in [(False, 0), (True, 0.001), (True, 0.003), (True, 0.007)]]
    [False, True, False, True]
    """

    cnp_interval_s: float = DEFAULT_CNP_INTERVAL_S
    ce_packets: int = 0
    cnps: int = 0
    _last: dict[Hashable, float] = field(default_factory=dict)

    def on_packet(self, flow: Hashable, ce: bool, now: float) -> bool:
        """True when a CNP should be sent to ``flow``'s sender now."""
        if not ce:
            return False
        self.ce_packets += 1
        last = self._last.get(flow)
        if last is not None and now - last < self.cnp_interval_s:
            return False
        self._last[flow] = now
        self.cnps += 1
        return True


@dataclass(slots=True)
class ReactionPoint:
    """Sender side: the current rate ``rate_pps`` (Rc) of one flow.

    Call :meth:`on_sent` for each packet sent, :meth:`on_cnp` for each CNP and
    :meth:`advance` (or either of the former) with the current time; timers fire in
    between. Starts at line rate with α = ``alpha_init``.

    >>> rp = ReactionPoint(DcqcnParams(line_rate_pps=1000))
    >>> rp.on_cnp(0.0); rp.on_cnp(0.001); round(rp.rate_pps, 2), round(rp.alpha, 4)
    (250.0, 1.0)
    """

    params: DcqcnParams = field(default_factory=DcqcnParams)
    rate_pps: float = 0.0
    target_pps: float = 0.0
    alpha: float = 0.0
    timer_rounds: int = 0
    byte_rounds: int = 0
    cnps: int = 0
    decreases: int = 0
    _pkts: int = 0
    _now: float = 0.0
    _next_alpha: float = math.inf
    _next_rate: float = math.inf
    _last_decrease: float = -math.inf

    def __post_init__(self) -> None:
        p = self.params
        self.rate_pps = self.target_pps = p.line_rate_pps
        self.alpha = p.alpha_init

    def on_cnp(self, now: float) -> None:
        """A CNP arrived: cut the rate by α/2, raise α, restart both increase counters."""
        self.advance(now)
        self.cnps += 1
        p = self.params
        if now - self._last_decrease < p.min_decrease_interval_s:
            return
        self._last_decrease = now
        self.decreases += 1
        self.target_pps = self.rate_pps
        self.rate_pps = max(p.min_rate_pps, self.rate_pps * (1 - self.alpha / 2))
        self.alpha = (1 - p.g) * self.alpha + p.g
        self.timer_rounds = self.byte_rounds = self._pkts = 0
        self._next_alpha = now + p.alpha_timer_s
        self._next_rate = now + p.rate_timer_s

    def on_sent(self, now: float, packets: int = 1) -> None:
        """``packets`` were sent at ``now``: feed the byte counter."""
        self.advance(now)
        if self._next_rate == math.inf:      # never cut: nothing to recover
            return
        self._pkts += packets
        while self._pkts >= self.params.byte_counter_pkts:
            self._pkts -= self.params.byte_counter_pkts
            self.byte_rounds += 1
            self._increase()

    def advance(self, now: float) -> None:
        """Fire the α timer and the rate timer up to ``now`` (monotonic time)."""
        if now < self._now:
            return
        self._now = now
        p = self.params
        if self._next_alpha <= now:
            n = int((now - self._next_alpha) // p.alpha_timer_s) + 1
            self.alpha *= (1 - p.g) ** n
            self._next_alpha += n * p.alpha_timer_s
        while self._next_rate <= now:
            if self.rate_pps >= p.line_rate_pps:   # fully recovered: skip idle expiries
                n = int((now - self._next_rate) // p.rate_timer_s) + 1
                self.timer_rounds += n
                self._next_rate += n * p.rate_timer_s
                break
            self.timer_rounds += 1
            self._next_rate += p.rate_timer_s
            self._increase()

    def interval_s(self) -> float:
        """Gap between two packets at the current rate."""
        return 1.0 / self.rate_pps

    def _increase(self) -> None:
        p = self.params
        f = p.fast_recovery_rounds
        if max(self.timer_rounds, self.byte_rounds) < f:
            pass                                            # fast recovery
        elif min(self.timer_rounds, self.byte_rounds) > f:
            i = min(self.timer_rounds, self.byte_rounds) - f
            self.target_pps += i * p.hai_rate_pps            # hyper increase
        else:
            self.target_pps += p.ai_rate_pps                 # additive increase
        self.target_pps = min(self.target_pps, p.line_rate_pps)
        self.rate_pps = min(p.line_rate_pps, (self.target_pps + self.rate_pps) / 2)
