"""Meters: BMv2's two-rate three-colour marker for ``meter`` and ``direct_meter``.

A configured meter has two token buckets, peak (PIR/PBS) and committed (CIR/CBS), with
rates given as in P4Runtime ``MeterConfig`` (units per second; bursts in units) and
converted as BMv2's P4Runtime back end does (``rate / 1e6`` units per microsecond).
BMv2's algorithm (``bm_sim/meters.cpp``), reproduced here:

* Token counts are integers. Each bucket remembers ``tokens_last``, the whole number of
  tokens earned between the switch's time origin and the previous update
  (``int(now_us * rate_per_us)``); an update adds the difference, capped at the burst.
  Configuring a meter fills both buckets to their bursts.
* The peak bucket is checked first: fewer tokens than the packet needs → **RED**
  (nothing taken from either bucket). Otherwise its tokens are taken and the committed
  bucket is checked: too few → **YELLOW**; enough → taken, **GREEN**.
* The input is 1 for a ``packets`` meter and the packet's length for ``bytes``.
* An unconfigured meter is GREEN. A data-plane ``execute`` with an index outside the
  array is GREEN and changes nothing (BMv2 does not bounds-check it).

Example::

    >>> m = MeterArray("MyIngress.m", 2, "packets")
    >>> m.set_config(0, cir=1, cburst=1, pir=2, pburst=2)
    >>> [m.execute(0, 100, now_us=0) for _ in range(3)]
    [0, 1, 2]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from p4sim.runtime.errors import RuntimeStateError

GREEN, YELLOW, RED = 0, 1, 2
METER_UNITS = ("packets", "bytes")


@dataclass(frozen=True, slots=True)
class MeterConfig:
    """P4Runtime ``MeterConfig``: rates in units per second, bursts in units."""

    cir: int
    cburst: int
    pir: int
    pburst: int


def _check_config(cfg: MeterConfig) -> None:
    if min(cfg.cir, cfg.cburst, cfg.pir, cfg.pburst) < 0:
        raise RuntimeStateError("INVALID_ARGUMENT", "meter rates and bursts must be non-negative")
    if cfg.cir > cfg.pir:
        # BMv2 rejects rates that are not sorted from committed to peak.
        raise RuntimeStateError("INVALID_ARGUMENT", f"meter CIR {cfg.cir} exceeds PIR {cfg.pir}")


class MeterCell:
    """One trTCM instance (one index of a meter array, or one table entry's direct meter).

    Example::

        >>> cell = MeterCell(); cell.execute(1, 0)       # unconfigured → GREEN
        0
    """

    __slots__ = ("config", "_rate", "_burst", "_tokens", "_last")

    def __init__(self) -> None:
        self.config: Optional[MeterConfig] = None
        # index 0 = peak bucket (RED when short), index 1 = committed (YELLOW when short)
        self._rate = [0.0, 0.0]
        self._burst = [0, 0]
        self._tokens = [0, 0]
        self._last = [0, 0]

    def set_config(self, cfg: MeterConfig) -> None:
        """Configure (and refill) the two buckets."""
        _check_config(cfg)
        self.config = cfg
        self._rate = [cfg.pir / 1e6, cfg.cir / 1e6]
        self._burst = [cfg.pburst, cfg.cburst]
        self._tokens = [cfg.pburst, cfg.cburst]
        self._last = [0, 0]

    def reset(self) -> None:
        """Back to unconfigured (always GREEN)."""
        self.config = None

    def execute(self, units: int, now_us: int) -> int:
        """Colour of a packet needing ``units`` tokens at time ``now_us`` (µs since start)."""
        if self.config is None:
            return GREEN
        rate, burst, tokens, last = self._rate, self._burst, self._tokens, self._last
        for i, colour in ((0, RED), (1, YELLOW)):
            earned = int(now_us * rate[i])
            new = earned - last[i]
            if new > 0:
                last[i] = earned
                tokens[i] = min(tokens[i] + new, burst[i])
            if tokens[i] < units:
                return colour
            tokens[i] -= units
        return GREEN


class MeterArray:
    """v1model ``meter(size, type)``: ``size`` trTCM cells, created on configuration."""

    def __init__(self, name: str, size: int, unit: str = "packets") -> None:
        if unit not in METER_UNITS:
            raise ValueError(f"unknown meter unit {unit!r} (expected one of {METER_UNITS})")
        self.name = name
        self.size = size
        self.unit = unit
        self._cells: dict[int, MeterCell] = {}

    def execute(self, index: int, nbytes: int, now_us: int) -> int:
        """Data-plane ``execute_meter(index)``: 0 GREEN, 1 YELLOW, 2 RED."""
        cell = self._cells.get(index)
        if cell is None:
            return GREEN
        return cell.execute(1 if self.unit == "packets" else nbytes, now_us)

    def _check(self, index: int) -> None:
        if not 0 <= index < self.size:
            raise RuntimeStateError("OUT_OF_RANGE", f"meter {self.name}: index {index} not in [0, {self.size})")

    def set_config(self, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        """Control plane: configure one cell (P4Runtime ``MeterEntry`` with a config)."""
        self._check(index)
        cell = MeterCell()
        cell.set_config(MeterConfig(cir, cburst, pir, pburst))
        self._cells[index] = cell

    def get_config(self, index: int) -> Optional[MeterConfig]:
        """The cell's configuration, None when unconfigured."""
        self._check(index)
        cell = self._cells.get(index)
        return cell.config if cell is not None else None

    def reset_config(self, index: Optional[int] = None) -> None:
        """Unconfigure one cell (or all): it then marks everything GREEN."""
        if index is None:
            self._cells.clear()
            return
        self._check(index)
        self._cells.pop(index, None)


class DirectMeter:
    """v1model ``direct_meter<T>(type)``: each entry of the owning table has a :class:`MeterCell`.

    BMv2 executes the direct meter on every hit of the table (``read()`` only fetches the
    colour); :meth:`p4sim.runtime.tables.Table.apply` does this.
    """

    def __init__(self, name: str, unit: str = "packets") -> None:
        if unit not in METER_UNITS:
            raise ValueError(f"unknown meter unit {unit!r} (expected one of {METER_UNITS})")
        self.name = name
        self.unit = unit

    def new_cell(self) -> MeterCell:
        return MeterCell()
