"""The scenarios ``make run`` tells on the live testbed, each a module of one shape (plan,
run with GOR, report): the story (:mod:`scenarios.story`), link failure and dead link
(:mod:`scenarios.link_failure`), the MoE all-to-all (:mod:`scenarios.alltoall`), with the
GOR session they share (:mod:`scenarios.gor_session`), the telemetry they read
(:mod:`scenarios.telemetry`) and the report they write (:mod:`scenarios.report`).

The registry is :mod:`scenarios.registry`; the command line ``python -m scenarios``
(:mod:`scenarios.cli`) brings the testbed up (:mod:`testbed`) and runs one. Scenarios use
the testbed, the hosts and the controller; nothing below them imports a scenario.

>>> from scenarios.registry import SCENARIOS
>>> "default" in SCENARIOS
True
"""
