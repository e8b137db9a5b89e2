"""The egress queue limit of the fabric plan (``p4src/include/control/admission.p4``): at
most this many packets of one egress queue (port, priority) between a switch's ingress and
the end of its egress; a packet beyond it is dropped in ingress, before the PFC occupancy
and the shared buffer count it.

Why the plan writes it: the program's PFC and shared-buffer counts add a packet in ingress
and take it off in egress, and a packet the target's queue tail-drops never reached
egress, so its count stayed for good. A compromised host made that happen at will
(sec-red-s47, live on the p4sim testbed): 5 s of PAUSE frames from b1s1 held its leaf's
queue towards it, the queue tail-dropped what the spines sent b1s1, and b1r0l0's uplink
cells of priority 3 were left at 735 and 1,224 packets with ``paused`` stuck at 1: the leaf
never paused a spine again, so the lossless class had no PFC for any host of the leaf
until the switch restarted (dynamic mode: the leaked cells shrink every port's threshold).
With the limit at most the queue's depth, the queue never holds more counted packets than
it can take: the program drops them instead, and every count is taken off again.

:data:`QUEUE_LIMIT_PKTS` is 64: the depth of every egress queue on both targets as the
testbed runs them (BMv2 simple_switch's default queue capacity and p4sim's
``--queue-depth`` default; ``scenarios.incast.QUEUE_PKTS`` models the same 64). A switch
whose queues are set shallower (``set_queue_depth``) needs a limit no larger than its
depth, or the target's tail drops (and the counts they leave) come back.

Example::

    >>> e = admission_entry(64)
    >>> e.table, e.action.rsplit(".", 1)[1], e.params, e.default
    ('FabricIngress.admission.config', 'set_queue_limit', {'queue_pkts': 64}, True)
    >>> admission_entry(0)
    Traceback (most recent call last):
    ValueError: queue_limit_pkts: 0 packets (must be an integer from 1 to 2^32 - 1)
"""
from __future__ import annotations

from controller.fabric.entries import Entry

T_ADMISSION = "FabricIngress.admission.config"
"""The keyless table whose default action sets the limit."""
ADMISSION_ACTION = "FabricIngress.admission.set_queue_limit"
ADMISSION_QUEUED_REGISTER = "FabricIngress.admission.queued"
"""Packets of each egress queue (``egress_port * 8 + priority``) in the pipeline."""
ADMISSION_DROPS_COUNTER = "FabricIngress.admission.drops"
"""Packets the limit dropped, by egress port."""
QUEUE_LIMIT_PKTS = 64
"""The plan's default limit: the targets' egress queue depth (module docstring)."""


def admission_entry(queue_limit_pkts: int) -> Entry:
    """The default action of ``FabricIngress.admission.config``: ``set_queue_limit``.
    Raises ``ValueError`` naming ``queue_limit_pkts`` when it is below 1 or above 2^32 - 1."""
    if isinstance(queue_limit_pkts, bool) or not isinstance(queue_limit_pkts, int) \
            or not 1 <= queue_limit_pkts < 2 ** 32:
        raise ValueError(f"queue_limit_pkts: {queue_limit_pkts!r} packets "
                         "(must be an integer from 1 to 2^32 - 1)")
    return Entry(T_ADMISSION, {}, ADMISSION_ACTION, {"queue_pkts": queue_limit_pkts},
                 default=True)


__all__ = ["ADMISSION_ACTION", "ADMISSION_DROPS_COUNTER", "ADMISSION_QUEUED_REGISTER",
           "QUEUE_LIMIT_PKTS", "T_ADMISSION", "admission_entry"]
