"""Labs on the real fabric program: one lab switch running ``p4src/fabric.p4`` as one leaf
of a small fabric, programmed exactly as ``python -m controller setup`` programs it
(``controller.fabric_setup.FabricProgrammer``), through the lab switch's own P4Runtime
connection. Labs 04 and 05 use it.

Example::

    >>> fab = build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=1,   # doctest: +SKIP
    ...                               spines=2))
    >>> with LabSwitch(FABRIC_PROGRAM, lab="04-reading-the-switch",             # doctest: +SKIP
    ...                ports=sorted(fab.switch("b0r0l0").ports)) as sw:
    ...     plan = program_leaf(sw, fab, "b0r0l0")
    ...     plan.groups[1].ports
    (3, 4)
"""
from __future__ import annotations

from controller.fabric_setup import FabricProgrammer, SwitchPlan
from labs.labkit.build import REPO
from labs.labkit.switch import LabSwitch
from topo.model import Fabric

FABRIC_PROGRAM = REPO / "p4src" / "fabric.p4"


def program_leaf(sw: LabSwitch, fab: Fabric, leaf: str) -> SwitchPlan:
    """Write the controller's plan of ``leaf`` (routes, ECMP groups, next hops, port MACs …)
    through ``sw``'s connection and return the plan. ``sw`` must run
    :data:`FABRIC_PROGRAM` with the leaf's ports; the connection stays the lab switch's
    (it closes it)."""
    fp = FabricProgrammer(fab, sw.out_dir / "fabric.p4info.txtpb", sw.out_dir / "fabric.json",
                          pfc=None)
    fp.connections[leaf] = sw.connection
    try:
        fp.install(leaf)
    finally:
        fp.connections.clear()           # the lab switch owns (and closes) the connection
    return fp.plans[leaf]
