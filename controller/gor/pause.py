"""Pause-storm alarm: PFC PAUSE frames on a link direction over a threshold rate for a
duration, with hysteresis. It is its own alarm, next to the ECN levels; GOR does **not**
re-route for it.

The input is one telemetry interval per link direction: the PFC frames the port
*received* (``FabricIngress.pfc.rx_frames``, summed over priorities: the poller's
``LinkSample.pfc_rx``) — the peer telling this switch to stop sending on this direction.
The measure is **frames per second**.

Default thresholds (:class:`PauseStormThresholds`):

============== ========= ===============================================================
setting        default   meaning
============== ========= ===============================================================
raise_fps      200 /s    rate at or above which the storm clock runs
raise_after_s  0.5 s     the rate must stay at or above ``raise_fps`` this long to raise
clear_fps      50 /s     rate below which the clear clock runs
clear_after_s  1.0 s     the rate must stay below ``clear_fps`` this long to clear
============== ========= ===============================================================

An interval between the two rates stops both clocks (a raised storm stays raised, a
quiet link stays quiet): a link that pauses now and then, as PFC is meant to, never
raises; one that keeps pausing for half a second does.

**Why no re-route.** A pause storm is a device that does not drain its receive buffer (a
stuck NIC or host, a misconfigured headroom, a PFC deadlock), not an elephant collision:
moving flows onto other links spreads the pauses. The operator should find the device
that sends the PAUSE frames (the peer of the link: its ``gor_link_pfc_tx_frames_total``
grows; its hosts' NICs), check its receive path and drops, and enable the switch's PFC
watchdog or take the port out of service (``GorLoop.link_down``) if it persists.

Example::

    >>> m = PauseStormMonitor()
    >>> m.observe(("s0", 1), 0.0, pfc_frames=50, dt_s=0.1) is None     # 500 /s: clock runs
    True
    >>> m.observe(("s0", 1), 0.5, pfc_frames=50, dt_s=0.1).raised
    True
    >>> m.observe(("s0", 1), 0.6, pfc_frames=0, dt_s=0.1) is None        # held 1 s
    True
    >>> m.observe(("s0", 1), 1.6, pfc_frames=0, dt_s=0.1).raised
    False
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from controller.gor.decisions import LinkKey

PAUSE_STORM_ADVICE = ("not re-routed: find the device sending PAUSE frames (the link's peer, "
                      "its NICs), check its receive path; PFC watchdog or link_down if it persists")


@dataclass(frozen=True, slots=True)
class PauseStormThresholds:
    """Raise/clear rates (PFC frames received per second) and durations (seconds).

    >>> PauseStormThresholds().raise_fps
    200.0
    """

    raise_fps: float = 200.0
    raise_after_s: float = 0.5
    clear_fps: float = 50.0
    clear_after_s: float = 1.0

    def __post_init__(self) -> None:
        if not 0 <= self.clear_fps < self.raise_fps:
            raise ValueError(f"pause storm: clear rate {self.clear_fps} must be below the raise "
                             f"rate {self.raise_fps}")
        if self.raise_after_s < 0 or self.clear_after_s < 0:
            raise ValueError("pause storm durations must not be negative")


@dataclass(frozen=True, slots=True)
class PauseStormEvent:
    """A link direction's pause storm was raised (``raised``) or cleared at ``t_s``;
    ``frames_per_s`` is the last interval's rate, ``held_s`` how long the rate held.

    >>> PauseStormEvent(("s0", 1), 1.0, True, 400.0, 0.5).raised
    True
    """

    link: LinkKey
    t_s: float
    raised: bool
    frames_per_s: float
    held_s: float


@dataclass(slots=True)
class _LinkPause:
    storm: bool = False
    over_since_s: Optional[float] = None
    under_since_s: Optional[float] = None
    since_s: float = 0.0
    last_fps: float = 0.0


class PauseStormMonitor:
    """The pause-storm state of every link direction seen (see the module docstring).

    Feed :meth:`observe` one call per link and interval (time non-decreasing per link);
    it returns a :class:`PauseStormEvent` when the storm state changes.
    """

    def __init__(self, thresholds: Optional[PauseStormThresholds] = None) -> None:
        self.thresholds = thresholds or PauseStormThresholds()
        self.links: dict[LinkKey, _LinkPause] = {}

    def observe(self, link: LinkKey, t_s: float, pfc_frames: int,
                dt_s: float) -> Optional[PauseStormEvent]:
        """One interval of ``dt_s`` seconds ending at ``t_s`` with ``pfc_frames`` received."""
        th = self.thresholds
        st = self.links.setdefault(link, _LinkPause())
        fps = pfc_frames / dt_s if dt_s > 0 else 0.0
        st.last_fps = fps
        start = t_s - max(dt_s, 0.0)                 # the interval's start: the clock's origin
        if fps >= th.raise_fps:
            st.under_since_s = None
            if st.over_since_s is None:
                st.over_since_s = start
            if not st.storm and t_s - st.over_since_s >= th.raise_after_s - 1e-9:
                return self._change(link, st, t_s, True, t_s - st.over_since_s)
        elif fps < th.clear_fps:
            st.over_since_s = None
            if st.under_since_s is None:
                st.under_since_s = start
            if st.storm and t_s - st.under_since_s >= th.clear_after_s - 1e-9:
                return self._change(link, st, t_s, False, t_s - st.under_since_s)
        else:
            st.over_since_s = st.under_since_s = None
        return None

    @staticmethod
    def _change(link: LinkKey, st: _LinkPause, t_s: float, storm: bool,
                held_s: float) -> PauseStormEvent:
        st.storm, st.since_s = storm, t_s
        st.over_since_s = st.under_since_s = None
        return PauseStormEvent(link, t_s, storm, round(st.last_fps, 1), round(held_s, 3))

    def active(self) -> list[LinkKey]:
        """Links in a pause storm now, sorted.

        >>> PauseStormMonitor().active()
        []
        """
        return sorted(k for k, st in self.links.items() if st.storm)


__all__ = ["PAUSE_STORM_ADVICE", "PauseStormEvent", "PauseStormMonitor", "PauseStormThresholds"]
