"""Per-uplink counters of a testbed run: the leaf uplinks of the fabric, their
``FabricEgress.telemetry.tx`` packet counters read over P4Runtime (reads only, nothing is
written), read again until they stop changing, and the busiest ÷ mean spread.

>>> max_over_mean({"a": 2, "b": 2})
1.0
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from testbed.traffic.probe import read_until_stable

TX_COUNTER = "FabricEgress.telemetry.tx"


def leaf_uplinks(fabric: Any, leaves: Optional[Sequence[str]] = None) -> dict[str, tuple[str, int]]:
    """Uplink name (``"b0r0l0->s0"``) → (leaf, port), for ``leaves`` (default: all).

    >>> from topo.model import build_fabric
    >>> sorted(leaf_uplinks(build_fabric(), ["b0r0l0"]))
    ['b0r0l0->s0', 'b0r0l0->s1']
    """
    return {f"{sw.name}->{info.peer_node}": (sw.name, p)
            for sw in fabric.switches if sw.role == "leaf"
            and (leaves is None or sw.name in leaves)
            for p, info in sorted(sw.ports.items()) if info.kind == "uplink"}


def read_uplink_tx(connections: Mapping[str, Any],
                   uplinks: Mapping[str, tuple[str, int]]) -> dict[str, int]:
    """Packets each uplink has sent so far (``FabricEgress.telemetry.tx``, one wildcard
    read per leaf over its P4Runtime connection; nothing is written)."""
    out: dict[str, int] = {}
    cache: dict[str, Any] = {}
    for name, (leaf, port) in uplinks.items():
        if leaf not in cache:
            cache[leaf] = connections[leaf].read_counter(TX_COUNTER)
        cell = cache[leaf].get(port)
        out[name] = int(cell.packets) if cell else 0
    return out


def max_over_mean(values: Mapping[str, float]) -> float:
    """Busiest ÷ mean (1.0 = perfectly balanced; 0.0 when nothing was sent).

    >>> max_over_mean({"a": 300, "b": 100})
    1.5
    """
    vals = list(values.values())
    mean = sum(vals) / len(vals) if vals else 0.0
    return max(vals) / mean if mean else 0.0


def settled_uplink_tx(connections: Mapping[str, Any], uplinks: Mapping[str, tuple[str, int]],
                      timeout_s: float = 3.0) -> dict[str, int]:
    """:func:`read_uplink_tx` read again until two reads in a row agree (the last frames
    of the run have left the uplinks), at most ``timeout_s``; the last read."""
    tx, _ = read_until_stable(lambda: read_uplink_tx(connections, uplinks), interval_s=0.1,
                              timeout_s=timeout_s)
    return tx


__all__ = ["TX_COUNTER", "leaf_uplinks", "max_over_mean", "read_uplink_tx", "settled_uplink_tx"]
