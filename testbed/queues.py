"""Queue rates of the fabric's leaf uplinks on a running testbed.

Congestion on these machines comes from switch queue rates (there is no netem): every leaf
uplink drains a fixed number of packets per second, set through the target's own
runtime (:func:`testbed.control.open_control`: p4sim's control API, BMv2's Thrift
runtime) and cleared on the way out.

>>> rates = set_uplink_rates(fabric, state, 343, print)      # doctest: +SKIP
testbed: 8 leaf uplinks drain 343 packets/s (p4sim control API)
>>> clear_rates(state, rates)                                 # doctest: +SKIP
"""
from __future__ import annotations

from typing import Any, Callable

from testbed.control import open_control


def _leaf_uplinks(fabric: Any) -> list[tuple[str, int]]:
    return [(sw.name, p) for sw in fabric.switches if sw.role == "leaf"
            for p, info in sorted(sw.ports.items()) if info.kind == "uplink"]


def set_uplink_rates(fabric: Any, state: Any, rate_pps: float,
                     say: Callable[[str], None]) -> dict[tuple[str, int], float]:
    """Set ``rate_pps`` (whole packets per second) on every leaf uplink through the
    target's queue control (:func:`testbed.control.open_control`: p4sim's control API,
    BMv2's Thrift runtime); the rates set. A switch whose control fails raises
    :class:`testbed.control.ControlError`: a story without its queue rates would measure
    nothing, so it does not go on without them."""
    rate = max(1, round(rate_pps))
    done: dict[tuple[str, int], float] = {}
    by_switch: dict[str, list[int]] = {}
    for name, port in _leaf_uplinks(fabric):
        by_switch.setdefault(name, []).append(port)
    for name, ports in by_switch.items():
        ctl = open_control(state.target, state.switches.get(name, {}), name)
        try:
            for port in ports:
                ctl.set_queue_rate(rate, port=port)
                done[(name, port)] = float(rate)
        finally:
            ctl.close()
    say(f"testbed: {len(done)} leaf uplinks drain {rate} packets/s "
        f"({state.target} {'control API' if state.target == 'p4sim' else 'Thrift runtime'})")
    return done


def clear_rates(state: Any, rates: dict[tuple[str, int], float]) -> None:
    """Queues back to unlimited (best effort on the way out)."""
    for (name, port) in rates:
        try:
            ctl = open_control(state.target, state.switches[name], name)
            try:
                ctl.set_queue_rate(0, port=port)
            finally:
                ctl.close()
        except Exception:  # noqa: BLE001 — best effort on the way out
            pass



__all__ = ["clear_rates", "set_uplink_rates"]
