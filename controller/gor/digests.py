"""Digest readers: one thread per switch hands the switches' digest lists to GOR's loop.

Three digests reach GOR: ``flow_sample_t`` (1:N samples of the ports GOR samples),
``alarm_digest_t`` (a port's ECN alarm level, decided by the switch) and
``elephant_digest_t`` (a heavy hitter found by the switch); see :mod:`p4src.alarmmodel`
and :mod:`controller.gor.dataplane`. ``python -m controller run`` and the testbed start
one :func:`digest_reader` thread per switch connection after :func:`enable_digests`; the
loop drains what they queued at its next tick
(:meth:`controller.gor.loop.GorLoop.submit_digests`). After an alarm digest the reader
calls ``on_alarm``: its owner has :meth:`GorLoop.react <controller.gor.loop.GorLoop.
react>` run at once (``python -m controller run`` and the testbed pass
:meth:`Reactor.request <controller.gor.reactor.Reactor.request>`, which returns at once:
the reader never waits for a reaction), so GOR decides on the report's arrival, not at
the next poll; with
``urgent=loop.wants_now`` it does so too after a flow sample while a move waits to be
seen on its new uplink (that sample may confirm it), and after an elephant report (or a
sample) while an alarmed link's round waits for one (:meth:`GorLoop.wants_now
<controller.gor.loop.GorLoop.wants_now>`). ``conn.get_digest`` blocks on the stream's
queue: a digest is handed on when it arrives, ``poll_s`` only bounds how long the reader
waits before it looks at ``stop`` again.

Example::

    >>> failed = enable_digests(prog.connections, prog.connections)      # doctest: +SKIP
    >>> threading.Thread(target=digest_reader, args=(loop, "b0r0l0", conn, stop),
    ...                  kwargs={"on_alarm": reactor.request}).start()       # doctest: +SKIP
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Iterable, Mapping, Optional

from p4src.alarmmodel import ALARM_DIGEST, ELEPHANT_DIGEST

DIGEST_NAME = "flow_sample_t"
URGENT_DIGESTS = (ALARM_DIGEST,)
"""Digests the loop always acts on at once: a switch changed a port's alarm level.
(Elephant reports come every window of every elephant; the loop reads them at its next
tick, or at once while an alarmed link waits for them: ``GorLoop.wants_now``.)"""
DIGESTS = (DIGEST_NAME, ALARM_DIGEST, ELEPHANT_DIGEST)
"""Every digest GOR reads (the others a program may send are ignored)."""

log = logging.getLogger("controller.gor.loop")


def digest_name(digest: Any) -> str:
    """The P4Info name of a DigestList (``flow_sample_t`` for a bare list of rows, as
    tests hand in).

    >>> digest_name([[1, 2]]), digest_name(type("D", (), {"name": "alarm_digest_t"})())
    ('flow_sample_t', 'alarm_digest_t')
    """
    name = getattr(digest, "name", None)
    return DIGEST_NAME if name is None else str(name).rsplit(".", 1)[-1]


def urgent_digest(name: str) -> bool:
    """The default ``urgent`` of :func:`digest_reader`: only the switches' alarm reports.

    >>> urgent_digest("alarm_digest_t"), urgent_digest("flow_sample_t")
    (True, False)
    """
    return name in URGENT_DIGESTS


def digest_reader(loop: Any, switch: str, conn: Any, stop: Any, poll_s: float = 0.2,
                  on_alarm: Optional[Callable[[], None]] = None,
                  urgent: Callable[[str], bool] = urgent_digest) -> None:
    """Body of one digest reader thread: ``conn.get_digest`` until ``stop`` (an Event) is
    set, handing the digest lists GOR uses to ``loop``; after a digest ``urgent(name)``
    says GOR acts on at once (default: an alarm report; the loop's own rule is
    :meth:`GorLoop.wants_now <controller.gor.loop.GorLoop.wants_now>`), ``on_alarm()``.
    Errors are logged and the thread backs off one second, it never dies on a bad switch.
    ``conn`` may be the mapping of connections (``programmer.connections``): the reader
    then follows ``conn[switch]``, so a switch reconnected after a restart is read on its
    new connection."""
    while not stop.is_set():
        try:
            cur = conn[switch] if isinstance(conn, Mapping) else conn
            dl = cur.get_digest(timeout_s=poll_s)
        except Exception as exc:  # noqa: BLE001
            log.warning("%s: digest read failed: %s", switch, exc)
            stop.wait(1.0)
            continue
        if dl is None:
            continue
        name = digest_name(dl)
        if name in DIGESTS:
            loop.submit_digests(switch, dl)
            if on_alarm is not None and urgent(name):
                on_alarm()


#: samples per DigestList. Small on purpose: BMv2's P4Runtime server (PI) sends a list
#: when it holds ``max_list_size`` samples, or else only from a sweep that runs at most
#: every 100 ms and needs two visits (PI's digest_mgr clamps ``max_timeout_ns`` to
#: 100 ms): with 64 a congested port's samples reached GOR in lists ~0.3 s apart on BMv2
#: 1.15.5 (1:1 sampling of 300 pkt/s: 8 lists in 2.6 s), with 8 every ~25 ms. (One per
#: list costs p4sim a gRPC message per sampled packet.) Alarm and elephant digests always
#: go in lists of one.
DIGEST_LIST_SIZE = 8
DIGEST_MAX_TIMEOUT_NS = 10_000_000


def enable_digests(connections: Mapping[str, Any], switches: Iterable[str],
                   max_list_size: int = DIGEST_LIST_SIZE,
                   max_timeout_ns: int = DIGEST_MAX_TIMEOUT_NS) -> list[str]:
    """Enable the three digests on every switch that answers (the alarm and elephant
    digests always in lists of one: each is a decision to act on); returns the switches
    where one failed."""
    failed = []
    for sw in switches:
        for name in DIGESTS:
            size = max_list_size if name == DIGEST_NAME else 1
            try:
                connections[sw].enable_digest(name, max_timeout_ns=max_timeout_ns,
                                              max_list_size=size)
            except Exception as exc:  # noqa: BLE001
                log.warning("%s: digest %s not enabled: %s", sw, name, exc)
                failed.append(sw)
                break
    return failed


__all__ = ["DIGESTS", "DIGEST_LIST_SIZE", "DIGEST_MAX_TIMEOUT_NS", "DIGEST_NAME", "urgent_digest",
           "URGENT_DIGESTS", "digest_name", "digest_reader", "enable_digests"]
