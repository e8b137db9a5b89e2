"""topo — the fabric description: a multi-rail topology (blocks, servers, rails, leaves,
spines; pods joined by cores; one- or two-port NICs) as typed records, a networkx graph and
the ``build/topology.json`` file that the controller, hosts and testbed read. Pure Python:
no Mininet needed.

Modules: ``spec`` (FabricSpec, spec file validation), ``model`` (records, graph, build,
JSON), ``routes`` (every switch's routes and ECMP groups), ``draw`` (PNG), ``__main__``
(``python -m topo build|show``). Example spec files: ``topo/specs/default.yaml`` (the
testbed default), ``topo/specs/pod2-dualport.yaml`` (2 pods, cores, dual-port NICs),
``topo/specs/pod64k.yaml`` (65,536 GPUs).

Example::

    >>> from topo import FabricSpec, build_fabric
    >>> fab = build_fabric(FabricSpec(blocks=2, servers_per_block=2, rails=2, spines=2))
    >>> len(fab.switches), len(fab.hosts), fab.graph.number_of_edges()
    (6, 4, 16)
"""
from topo.model import (
    Fabric,
    HostInfo,
    Link,
    NicInfo,
    NicPort,
    PortInfo,
    SwitchInfo,
    build_fabric,
    load_fabric,
    load_fabric_text,
)
from topo.spec import FabricSpec, SpecError, SwitchOverride, load_spec, spec_from_dict

__all__ = ["Fabric", "FabricSpec", "HostInfo", "Link", "NicInfo", "NicPort", "PortInfo", "SpecError", "SwitchInfo",
           "SwitchOverride", "build_fabric", "load_fabric", "load_fabric_text", "load_spec",
           "spec_from_dict"]
