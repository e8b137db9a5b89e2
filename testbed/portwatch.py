"""The switches' port-status events on the testbed: :class:`CarrierWatch` reads the carrier
of every fabric port (leaf–spine, spine–core) every ``interval_s`` and reports each change
to a callback — what a switch's port-status notification tells its controller when a cable
or the switch at its other end dies.

A Mininet switch's ports are veth interfaces ``<switch>-eth<port>`` in the root namespace;
when the far end goes down (a dead ToR: every interface of it down), the near end loses its
carrier (``/sys/class/net/<if>/carrier`` reads 0; an interface set down itself cannot be
read: counted as down too). The default interval, :data:`INTERVAL_S` (100 ms), is the
Linux bonding driver's default ``miimon`` (``BOND_DEFAULT_MIIMON``, the NICs'
link monitor: host/nic/README.md), so the fabric side hears of a dead leaf as fast as the
NICs do. The callback gets ``(switch, port, up, reason)`` — the signature of
:meth:`controller.gor.runtime.GorRuntime.submit_link_event` — once per change and per
end: both ends of one cable report, and GOR acts on the first (the second is a no-op).

    >>> states = {"s0-eth1": [True, False]}
    >>> got = []
    >>> w = CarrierWatch({("s0", 1): "s0-eth1"}, lambda sw, p, up, why: got.append((sw, p, up)),
    ...                  read=lambda iface: states[iface].pop(0))
    >>> w.poll(), w.poll(), got
    (0, 1, [('s0', 1, False)])
"""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

log = logging.getLogger(__name__)

INTERVAL_S = 0.1
"""How often the carriers are read (Linux bonding's default ``miimon``, 100 ms)."""

Report = Callable[[str, int, bool, str], None]


def read_carrier(iface: str) -> bool:
    """True when ``iface`` has a carrier; False when it has none, is down or is gone."""
    try:
        return Path(f"/sys/class/net/{iface}/carrier").read_text().strip() == "1"
    except OSError:            # EINVAL for an interface set down, ENOENT for one gone
        return False


def fabric_port_ifaces(fabric: Any) -> dict[tuple[str, int], str]:
    """(switch, port) → its interface, for every switch-to-switch port of ``fabric``.

    >>> from topo.model import build_fabric
    >>> sorted(fabric_port_ifaces(build_fabric()).items())[0]
    (('b0r0l0', 3), 'b0r0l0-eth3')
    """
    return {(sw.name, p): f"{sw.name}-eth{p}" for sw in fabric.switches
            for p, info in sorted(sw.ports.items()) if info.kind != "host"}


class CarrierWatch:
    """Reads the carriers of ``ports`` ((switch, port) → interface) every ``interval_s``
    in a thread (:meth:`start` … :meth:`stop`) or on :meth:`poll`; ``report`` gets every
    change (module docstring). ``events``: (monotonic time, switch, port, up) of each."""

    def __init__(self, ports: Mapping[tuple[str, int], str], report: Report, *,
                 interval_s: float = INTERVAL_S, read: Callable[[str], bool] = read_carrier,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s {interval_s}: must be > 0")
        self.ports, self.report, self.interval_s = dict(ports), report, interval_s
        self.read, self.clock = read, clock
        self.state: dict[tuple[str, int], bool] = {}
        self.events: list[tuple[float, str, int, bool]] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def poll(self) -> int:
        """Read every carrier once; report the changes (the first read of a port only
        sets its state); returns how many changed."""
        changed = 0
        for (sw, port), iface in self.ports.items():
            up = self.read(iface)
            before = self.state.get((sw, port))
            self.state[(sw, port)] = up
            if before is None or before == up:
                continue
            try:
                self.report(sw, port, up, f"carrier {'back' if up else 'lost'} on {iface}")
            except Exception as exc:  # noqa: BLE001 - e.g. GOR down (a controller_down fault)
                # not taken: keep the old state so that the next poll reports it again, and
                # keep the watch alive (an exception here would end its thread for good)
                self.state[(sw, port)] = before
                log.warning("carrier %s on %s not reported (%s: %s); retried at the next poll",
                            "back" if up else "lost", iface, type(exc).__name__, exc)
                continue
            changed += 1
            self.events.append((self.clock(), sw, port, up))
        return changed

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.poll()

    def start(self) -> "CarrierWatch":
        """Read the carriers now (the reference state), then every ``interval_s``."""
        self.poll()
        self._thread = threading.Thread(target=self._run, name="carrier-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop reading (waits for the thread)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self.interval_s + 1.0)


__all__ = ["CarrierWatch", "INTERVAL_S", "fabric_port_ifaces", "read_carrier"]
