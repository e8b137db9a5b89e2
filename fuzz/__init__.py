"""Fuzzing at scale of what an attacker can send Astral-P4: Ethernet frames into a live
p4sim switch (:mod:`fuzz.frames`), P4Runtime messages to its server (:mod:`fuzz.p4rt`)
and agent-protocol messages to a TCCL agent and GOR's flow registry (:mod:`fuzz.agent`).

Every campaign draws its inputs with the ``hypothesis`` library (strategies in
:mod:`fuzz.frame_gen`, :mod:`fuzz.p4rt_gen` and :mod:`fuzz.protogen`), seeded, so a run is
reproduced by its seed and size; each checks properties that must hold for any input
(the process lives, valid traffic still flows, counters add up, refused writes change
nothing, no ``UNKNOWN``/``INTERNAL`` answer) and records what broke them as a
:class:`fuzz.report.Finding`. ``python -m fuzz`` runs them (see fuzz/README.md).

>>> from fuzz.report import CampaignResult
>>> CampaignResult("frames", seed=1, size="small").ok
True
"""
