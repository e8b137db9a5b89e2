"""TCCL: the collective-communication library of the hosts, in pure Python.

* :mod:`host.tccl.ports` — hash-orthogonal UDP source ports: every ECMP hop's links
  carry at most ``ceil(flows / links)`` of a set of concurrent RoCEv2 flows, solved with
  the published hash model (``p4src/hashmodel.py``); its parts are
  :mod:`host.tccl.portplan` (records), :mod:`host.tccl.hops` (a flow's paths in the
  model), :mod:`host.tccl.colouring` (Kempe edge colouring) and
  :mod:`host.tccl.polarisation` (same CRC on both tiers).
* :mod:`host.tccl.planner` — ring / tree / All-to-All plans over the job's ranks on a
  ``topo.model.Fabric``, bytes per tier (nvlink / leaf / spine) and α-β times.
* :mod:`host.tccl.dualchannel` — the NVLink / RoCE split of a tensor-parallel AllReduce.
* ``python -m host.tccl plan ...`` / ``python -m host.tccl ports ...`` — the CLIs
  (:mod:`host.tccl.cli`).

Example::

    >>> from host.tccl.dualchannel import DualChannel
    >>> DualChannel().split(1 << 20).nvlink_bytes > 0
    True
"""
