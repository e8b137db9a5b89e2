"""Digest readers: one thread per switch hands ``flow_sample_t`` digest lists to GOR's loop.

``python -m controller run`` and the testbed start one :func:`digest_reader` thread per
switch connection after :func:`enable_digests`; the loop drains what they queued at its
next tick (:meth:`controller.gor.loop.GorLoop.submit_digests`).

Example::

    >>> failed = enable_digests(prog.connections, prog.connections)      # doctest: +SKIP
    >>> threading.Thread(target=digest_reader, args=(loop, "b0r0l0", conn, stop)).start()  # doctest: +SKIP
"""
from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping

DIGEST_NAME = "flow_sample_t"

log = logging.getLogger("controller.gor.loop")


def digest_reader(loop: Any, switch: str, conn: Any, stop: Any, poll_s: float = 0.2) -> None:
    """Body of one digest reader thread: ``conn.get_digest`` until ``stop`` (an Event) is
    set, handing ``flow_sample_t`` lists to ``loop``; errors are logged and the thread
    backs off one second, it never dies on a bad switch. ``conn`` may be the mapping of
    connections (``programmer.connections``): the reader then follows ``conn[switch]``,
    so a switch reconnected after a restart is read on its new connection."""
    while not stop.is_set():
        try:
            cur = conn[switch] if isinstance(conn, Mapping) else conn
            dl = cur.get_digest(timeout_s=poll_s)
        except Exception as exc:  # noqa: BLE001
            log.warning("%s: digest read failed: %s", switch, exc)
            stop.wait(1.0)
            continue
        if dl is not None and getattr(dl, "name", DIGEST_NAME) == DIGEST_NAME:
            loop.submit_digests(switch, dl)


#: samples per DigestList. Small on purpose: BMv2's P4Runtime server (PI) sends a list
#: when it holds ``max_list_size`` samples, or else only from a sweep that runs at most
#: every 100 ms and needs two visits (PI's digest_mgr clamps ``max_timeout_ns`` to 100 ms):
#: with 64 a congested port's samples reached GOR in lists ~0.3 s apart on BMv2 1.15.5
#: (1:1 sampling of 300 pkt/s: 8 lists in 2.6 s), with 8 every ~25 ms.
DIGEST_LIST_SIZE = 8
DIGEST_MAX_TIMEOUT_NS = 10_000_000


def enable_digests(connections: Mapping[str, Any], switches: Iterable[str],
                   max_list_size: int = DIGEST_LIST_SIZE,
                   max_timeout_ns: int = DIGEST_MAX_TIMEOUT_NS) -> list[str]:
    """Enable ``flow_sample_t`` on every switch that answers; returns those that failed."""
    failed = []
    for sw in switches:
        try:
            connections[sw].enable_digest(DIGEST_NAME, max_timeout_ns=max_timeout_ns,
                                          max_list_size=max_list_size)
        except Exception as exc:  # noqa: BLE001
            log.warning("%s: digest %s not enabled: %s", sw, DIGEST_NAME, exc)
            failed.append(sw)
    return failed


__all__ = ["DIGEST_LIST_SIZE", "DIGEST_MAX_TIMEOUT_NS", "DIGEST_NAME", "digest_reader",
           "enable_digests"]
