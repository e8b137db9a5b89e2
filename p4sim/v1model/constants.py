"""Numbers that BMv2 ``simple_switch`` fixes for the v1model architecture.

Instance types are the values of ``standard_metadata.instance_type`` that simple_switch
writes (``PKT_INSTANCE_TYPE_*`` in simple_switch.h); the drop port is the default
``--drop-port``.

Example::

    >>> from p4sim.v1model.constants import InstanceType, DROP_PORT
    >>> int(InstanceType.RESUBMIT), DROP_PORT
    (6, 511)
"""
from __future__ import annotations

from enum import IntEnum


class InstanceType(IntEnum):
    """``standard_metadata.instance_type`` values written by simple_switch."""

    NORMAL = 0
    INGRESS_CLONE = 1
    EGRESS_CLONE = 2
    COALESCED = 3
    RECIRC = 4
    REPLICATION = 5
    RESUBMIT = 6


PORT_BITS = 9
PORT_MASK = (1 << PORT_BITS) - 1
DROP_PORT = 511
"""``egress_spec`` value that drops the packet (what ``mark_to_drop`` writes)."""

EGRESS_SPEC_AT_EGRESS_START = (DROP_PORT + 1) & PORT_MASK
"""simple_switch sets egress_spec to drop_port + 1 (a 9-bit field: 0) before egress."""


MAX_WORK_ITEMS = 4096
"""Ingress + egress passes allowed for one input packet (a clone loop multiplies packets
without end). Resubmit and recirculate have no limit of their own, as on BMv2; a chain of
passes longer than this (BMv2 would loop on, taking other packets between passes) is
dropped here."""
