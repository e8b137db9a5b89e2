"""Names of the fabric's parts that monitoring and fault injection share: link
directions, component names, and the fault kinds.

The one owner of this vocabulary: the testbed's fault injector (``testbed.faults``) names
what it breaks with it, the monitor's localiser (``monitor.localiser``) names what it
finds with it, and the scenario that compares the two imports both. Nothing here runs
anything.

**Nodes** are switch names (``b0r0l0``, ``s1``) and NIC names (``<host>-eth<rail>``, the
host's interface: ``b0s1-eth0``; port 1 of a dual-port NIC is ``<host>-eth<rail>p1``). A **link direction** is ``LinkDir(src, dst)``, written
``"b0r0l0->s0"``; with parallel links the source port tells them apart
(``"b0r0l0:3->s0"``, :meth:`LinkDir.parse` reads both).

**Components** (:func:`component`)::

    link b0r0l0->s0          one direction of a cable (gray link, corruption)
    cable b0r0l0<->s0        both directions (a flapping link; names sorted)
    switch s1                a whole switch (hung; a dead ToR)
    route s0 10.1.0.0/24     one switch's route for one prefix (blackhole)
    nic b1s0-eth0            a server NIC (slow receiver: the origin of a pause storm), or
                             one port of it (a dead NIC port: ``nic b0s0-eth0p1``)
    port b0r0l0:3            one egress port's configuration (wrong ECN threshold)
    agent b0s0               a host's TCCL agent
    controller               GOR

>>> LinkDir.parse("b0r0l0->s0").reverse()
LinkDir(src='s0', dst='b0r0l0', src_port=None)
>>> component("cable", "s0", "b0r0l0")
'cable b0r0l0<->s0'
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

#: Fault kinds, as ``testbed.faults`` injects them and the localiser names them.
FAULT_KINDS: tuple[str, ...] = (
    "gray_link",            # one direction drops p% of packets
    "flapping_link",        # a cable goes down and up again, repeatedly
    "blackhole",            # one switch drops one prefix (its route removed or wrong)
    "hung_switch",          # a switch process stopped (SIGSTOP): no forwarding, no P4Runtime
    "slow_receiver",        # a NIC stops draining and pauses its leaf (PFC storm origin)
    "corruption",           # one direction corrupts frames (bad ICRC at the receiver)
    "wrong_ecn_threshold",  # one egress port marks CE far below the fabric's threshold
    "dead_agent",           # a host's TCCL agent is gone
    "controller_down",      # GOR stops answering
    "dead_tor",             # a leaf forwards nothing on any port while its P4Runtime answers
    "dead_nic_port",        # one port of a NIC (its cable to the leaf) passes nothing either way
)

#: The component word each fault kind's verdict names (see :func:`component`).
KIND_COMPONENT: dict[str, str] = {
    "gray_link": "link", "flapping_link": "cable", "blackhole": "route",
    "hung_switch": "switch", "slow_receiver": "nic", "corruption": "link",
    "wrong_ecn_threshold": "port", "dead_agent": "agent", "controller_down": "controller",
    "dead_tor": "switch", "dead_nic_port": "nic",
}

_LINK_RE = re.compile(r"^(?P<src>[A-Za-z0-9_.-]+?)(?::(?P<port>\d+))?->(?P<dst>[A-Za-z0-9_.-]+)$")


@dataclass(frozen=True, slots=True)
class LinkDir:
    """One direction of a cable, ``src`` sending to ``dst``; ``src_port`` is the sending
    switch's port when parallel links need it (``None`` otherwise, and for a NIC).

    >>> str(LinkDir("b0r0l0", "s0", 3)), str(LinkDir("b0s0-eth0", "b0r0l0"))
    ('b0r0l0:3->s0', 'b0s0-eth0->b0r0l0')
    """

    src: str
    dst: str
    src_port: Optional[int] = None

    def __str__(self) -> str:
        port = "" if self.src_port is None else f":{self.src_port}"
        return f"{self.src}{port}->{self.dst}"

    def reverse(self) -> "LinkDir":
        """The other direction of the same cable (its port is not known here: ``None``)."""
        return LinkDir(self.dst, self.src)

    def cable(self) -> str:
        """The cable's component name: ``cable A<->B`` with the names sorted."""
        return component("cable", self.src, self.dst)

    @classmethod
    def parse(cls, text: str) -> "LinkDir":
        """``"b0r0l0->s0"`` or ``"b0r0l0:3->s0"``; ``ValueError`` naming the text otherwise.

        >>> LinkDir.parse("b0r0l0:3->s0").src_port
        3
        """
        m = _LINK_RE.match(text.strip())
        if m is None:
            raise ValueError(f"not a link direction (want SRC->DST or SRC:PORT->DST): {text!r}")
        port = m.group("port")
        return cls(m.group("src"), m.group("dst"), int(port) if port is not None else None)


def component(word: str, *parts: str) -> str:
    """A component name: ``component("link", "b0r0l0", "s0") == "link b0r0l0->s0"``.

    ``word`` is one of ``link`` (src, dst), ``cable`` (two ends, sorted), ``switch``
    (name), ``route`` (switch, prefix), ``nic`` (NIC name), ``port`` (switch, port),
    ``agent`` (host), ``controller`` (nothing).

    >>> component("route", "s0", "10.1.0.0/24"), component("port", "b0r0l0", "3")
    ('route s0 10.1.0.0/24', 'port b0r0l0:3')
    """
    arity = {"link": 2, "cable": 2, "switch": 1, "route": 2, "nic": 1, "port": 2,
             "agent": 1, "controller": 0}
    if word not in arity:
        raise ValueError(f"unknown component word {word!r} (one of {', '.join(arity)})")
    if len(parts) != arity[word]:
        raise ValueError(f"component {word!r} takes {arity[word]} part(s), got {len(parts)}")
    if word == "link":
        return f"link {parts[0]}->{parts[1]}"
    if word == "cable":
        a, b = sorted(parts)
        return f"cable {a}<->{b}"
    if word == "port":
        return f"port {parts[0]}:{parts[1]}"
    if word == "controller":
        return "controller"
    return " ".join((word,) + parts)


__all__ = ["FAULT_KINDS", "KIND_COMPONENT", "LinkDir", "component"]
