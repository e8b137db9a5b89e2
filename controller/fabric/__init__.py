"""The fabric plan, pure data: from a topology, every table entry, ECMP group and clone
session ``p4src/fabric.p4`` needs on every switch, and the ECMP hash model that plan
publishes. No P4Runtime connection here (``controller.fabric_setup`` writes the plan).

One concern per module:

* ``topology`` — what is read of ``topo.model`` (protocols);
* ``entries`` — :class:`Entry`, the table names, forwarding entry builders;
* ``qos`` — DSCP → priority, :class:`EcnConfig`, :class:`PfcConfig` and their entries;
* ``ecmp`` — :func:`ecmp_groups` (the one rule);
* ``detours`` — the leaves' detours and :func:`fabric_hash_model` (groups and detours);
* ``sourceguard`` — the IPv4 source guard of the leaves' host ports (allowed sources);
* ``plan`` — :class:`SwitchPlan`, :func:`switch_id_of`, :func:`plan_fabric`.

Example::

    >>> from topo.model import build_fabric
    >>> plans = plan_fabric(build_fabric())
    >>> plans["b0r0l0"].hash_model() == fabric_hash_model(build_fabric()).switch("b0r0l0")
    True
"""
from controller.fabric.detours import fabric_hash_model
from controller.fabric.ecmp import DEFAULT_ALGORITHMS, LEAF_UPLINK_GROUP, EcmpGroup, ecmp_groups
from controller.fabric.entries import (T_ALGORITHM, T_ARP, T_ECN, T_GROUPS, T_MEMBERS,
                                       T_NEXTHOPS, T_PFC, T_PORT_MACS, T_QOS, T_ROUTES,
                                       T_SWITCH, Entry)
from controller.fabric.plan import (CPU_CLONE_SESSION, CPU_PORT, FABRIC_PREFIX,
                                    PFC_CLONE_SESSION_BASE, ROLE_CODES, SwitchPlan,
                                    plan_fabric, switch_id_of)
from controller.fabric.qos import DSCP_TO_PRIORITY, EcnConfig, PfcConfig
from controller.fabric.sourceguard import (GUARD_DROPS_COUNTER, T_GUARD_PORTS, T_GUARD_SOURCES,
                                           allowed_sources)
from controller.fabric.topology import FabricLike, HostLike, NicLike, PortLike, SwitchLike

__all__ = [
    "CPU_CLONE_SESSION", "CPU_PORT", "DEFAULT_ALGORITHMS", "DSCP_TO_PRIORITY", "EcmpGroup",
    "EcnConfig", "Entry", "FABRIC_PREFIX", "FabricLike", "GUARD_DROPS_COUNTER", "HostLike",
    "LEAF_UPLINK_GROUP",
    "NicLike", "PFC_CLONE_SESSION_BASE", "PfcConfig", "PortLike", "ROLE_CODES", "SwitchLike",
    "SwitchPlan", "T_ALGORITHM", "T_ARP", "T_ECN", "T_GROUPS", "T_GUARD_PORTS",
    "T_GUARD_SOURCES", "T_MEMBERS", "T_NEXTHOPS", "T_PFC", "T_PORT_MACS", "T_QOS", "T_ROUTES",
    "T_SWITCH", "allowed_sources", "ecmp_groups", "fabric_hash_model", "plan_fabric",
    "switch_id_of",
]
