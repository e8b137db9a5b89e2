"""NVLink / RoCE dual channel: split one tensor-parallel AllReduce message between the two
channels so that both finish together, from measured latency and bandwidth.

Model: a channel with latency α (s) and bandwidth B (bytes/s) moves x bytes in
``α + x / B`` (0 when x = 0: an unused channel costs nothing). Sending x bytes on NVLink
and S − x on RoCE completes at ``max(T_nv(x), T_roce(S − x))``. The optimum is either a
single channel or the split where both times are equal::

    x* = (α_roce − α_nv + S / B_roce) / (1 / B_nv + 1 / B_roce),   clamped to [0, S]

:meth:`DualChannel.split` evaluates the three candidates and keeps the fastest. The
AllReduce algorithm factor (``2(n−1)/n`` bytes per byte of message on a ring of n GPUs) is
the same on both channels, so it scales S and does not move the optimum fraction
(``tp_size`` applies it).

Defaults (documented guesses, replaced by measurements): NVLink α 200 ns and 200 GB/s per
direction and GPU (H800-class NVLink); RoCE α 4 µs (the seed) and 50 GB/s (one 400 Gb/s
NIC per GPU). Measurements update the estimates by EWMA (weight ``ewma_weight`` for the
newest sample), so the split follows a congested fabric or a busy NVLink.

Example::

    >>> dc = DualChannel()
    >>> s = dc.split(64 << 20)                      # 64 MiB: RoCE takes its share
    >>> 0.75 < s.nvlink_fraction < 0.85 and s.speedup > 1.2
    True
    >>> dc.split(4 << 10).nvlink_fraction           # 4 KiB: latency-bound, NVLink only
    1.0
"""
from __future__ import annotations

from dataclasses import dataclass

DEFAULT_NVLINK_ALPHA_S = 200e-9
DEFAULT_NVLINK_BYTES_PER_S = 200e9
DEFAULT_ROCE_ALPHA_S = 4e-6
DEFAULT_ROCE_BYTES_PER_S = 50e9
CHANNELS = ("nvlink", "roce")


@dataclass(slots=True)
class ChannelEstimate:
    """Latency and bandwidth of one channel: ``ChannelEstimate(4e-6, 50e9).time_s(0) == 0``."""

    alpha_s: float
    bytes_per_s: float

    def time_s(self, nbytes: float) -> float:
        """``α + bytes / B`` (0 for no bytes)."""
        return 0.0 if nbytes <= 0 else self.alpha_s + nbytes / self.bytes_per_s


@dataclass(frozen=True, slots=True)
class Split:
    """A split decision: bytes per channel, predicted times and the gain over the better
    single channel (``speedup`` ≥ 1)."""

    size_bytes: int
    nvlink_bytes: int
    roce_bytes: int
    time_s: float
    nvlink_only_s: float
    roce_only_s: float

    @property
    def nvlink_fraction(self) -> float:
        """Share of the message on NVLink (1.0 for an empty message)."""
        return self.nvlink_bytes / self.size_bytes if self.size_bytes else 1.0

    @property
    def speedup(self) -> float:
        """Better single-channel time / split time."""
        best = min(self.nvlink_only_s, self.roce_only_s)
        return best / self.time_s if self.time_s > 0 else 1.0


class DualChannel:
    """Split planner with EWMA-updated channel estimates.

    Example::

        >>> dc = DualChannel(ewma_weight=1.0)
        >>> dc.observe_bandwidth("roce", 0.0 + 25e9)    # the fabric got congested
        >>> dc.estimates["roce"].bytes_per_s
        25000000000.0
    """

    def __init__(self, nvlink: ChannelEstimate | None = None, roce: ChannelEstimate | None = None,
                 ewma_weight: float = 0.2, tp_size: int = 2) -> None:
        if not 0.0 < ewma_weight <= 1.0:
            raise ValueError(f"ewma_weight must be in (0, 1], got {ewma_weight}")
        if tp_size < 2:
            raise ValueError(f"tp_size must be at least 2, got {tp_size}")
        self.estimates = {
            "nvlink": nvlink or ChannelEstimate(DEFAULT_NVLINK_ALPHA_S, DEFAULT_NVLINK_BYTES_PER_S),
            "roce": roce or ChannelEstimate(DEFAULT_ROCE_ALPHA_S, DEFAULT_ROCE_BYTES_PER_S),
        }
        for name, est in self.estimates.items():
            _check(name, est.alpha_s, est.bytes_per_s)
        self.ewma_weight = ewma_weight
        self.tp_size = tp_size

    # ---------------------------------------------------------------- measurements
    def _channel(self, channel: str) -> ChannelEstimate:
        if channel not in self.estimates:
            raise ValueError(f"unknown channel {channel!r} (known: {', '.join(CHANNELS)})")
        return self.estimates[channel]

    def observe_latency(self, channel: str, alpha_s: float) -> None:
        """Fold a measured latency (seconds, ≥ 0) into the channel's estimate."""
        est = self._channel(channel)
        _check(channel, alpha_s, est.bytes_per_s)
        est.alpha_s += self.ewma_weight * (alpha_s - est.alpha_s)

    def observe_bandwidth(self, channel: str, bytes_per_s: float) -> None:
        """Fold a measured bandwidth (bytes/s, > 0) into the channel's estimate."""
        est = self._channel(channel)
        _check(channel, est.alpha_s, bytes_per_s)
        est.bytes_per_s += self.ewma_weight * (bytes_per_s - est.bytes_per_s)

    def observe_transfer(self, channel: str, nbytes: int, seconds: float) -> None:
        """A timed transfer: its bandwidth net of the current latency estimate."""
        est = self._channel(channel)
        if nbytes <= 0 or seconds <= 0:
            raise ValueError(f"{channel}: a transfer needs bytes > 0 and seconds > 0")
        self.observe_bandwidth(channel, nbytes / max(seconds - est.alpha_s, seconds * 1e-3))

    # ---------------------------------------------------------------- decision
    def split(self, size_bytes: int) -> Split:
        """The fastest split of an AllReduce message of ``size_bytes`` (see module doc)."""
        if size_bytes < 0:
            raise ValueError(f"size must be ≥ 0 bytes, got {size_bytes}")
        factor = 2.0 * (self.tp_size - 1) / self.tp_size
        nv, ro = self.estimates["nvlink"], self.estimates["roce"]

        def t(x: float) -> float:
            return max(nv.time_s(factor * x), ro.time_s(factor * (size_bytes - x)))

        wire = factor * size_bytes
        x = (ro.alpha_s - nv.alpha_s + wire / ro.bytes_per_s) / (1 / nv.bytes_per_s + 1 / ro.bytes_per_s)
        x_bytes = min(max(round(x / factor) if factor else size_bytes, 0), size_bytes)
        best = min((size_bytes, x_bytes, 0), key=lambda c: (t(c), -c))
        return Split(size_bytes, best, size_bytes - best, t(best), t(size_bytes), t(0))


def _check(channel: str, alpha_s: float, bytes_per_s: float) -> None:
    if alpha_s < 0:
        raise ValueError(f"{channel}: latency must be ≥ 0 s, got {alpha_s}")
    if bytes_per_s <= 0:
        raise ValueError(f"{channel}: bandwidth must be > 0 bytes/s, got {bytes_per_s}")


__all__ = ["CHANNELS", "ChannelEstimate", "DualChannel", "Split"]
