"""GOR's decision core: pure functions and state machines, no I/O.

* :mod:`~controller.gor.alarms` — three ECN alarm levels per link, with hysteresis;
* :mod:`~controller.gor.elephants` — flow table from ``flow_sample_t`` digests, Top-N;
* :mod:`~controller.gor.paths` — candidate paths, the 75 % safety rule, orders;
* :mod:`~controller.gor.simulate` — max-min fair flow-level simulation;
* :mod:`~controller.gor.decisions` — the typed records the decision log writes.

Example::

    >>> from controller.gor import AlarmMonitor, AlarmLevel
    >>> AlarmMonitor().observe(("s0", 1), 0.0, 300, 1000).new is AlarmLevel.CRITICAL
    True
"""
from controller.gor.alarms import AlarmMonitor, AlarmThresholds
from controller.gor.decisions import (AlarmEvent, AlarmLevel, FlowKey, LinkKey, MoveOrder,
                                      OverrideEntry, OverrideOrder, PathChoice, Rejection,
                                      RoundDecision)
from controller.gor.elephants import Elephant, FlowSample, FlowTable, MalformedSample
from controller.gor.paths import ElephantFlow, LinkState, PathEngine, nic_leaves
from controller.gor.simulate import max_min_fair

__all__ = ["AlarmEvent", "AlarmLevel", "AlarmMonitor", "AlarmThresholds", "Elephant", "ElephantFlow",
           "FlowKey", "FlowSample", "FlowTable", "LinkKey", "LinkState", "MalformedSample", "MoveOrder",
           "OverrideEntry", "OverrideOrder", "PathChoice", "PathEngine", "Rejection", "RoundDecision",
           "max_min_fair", "nic_leaves"]
