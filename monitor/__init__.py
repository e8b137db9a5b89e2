"""Monitoring and fault localisation of the fabric (Astral's "full-body CT").

The parts, one owner each (monitor/README.md):

* :mod:`monitor.evidence` — the records the parts exchange: probe paths and their
  statistics, link estimates, counter rates, the evidence snapshot the localiser reads,
  verdicts (the names shared with the testbed's fault injector are ``topo.components``).
* :mod:`monitor.prometheus`, :mod:`monitor.embedded` — a real Prometheus server started
  for a run (or the embedded store where Prometheus is absent), and queries of it.
* :mod:`monitor.switch_exporter`, :mod:`monitor.exporters` — switch counters and liveness
  (P4Runtime reads) and the metric files of NIC emulators and probers.
* :mod:`monitor.probes`, :mod:`monitor.probeplan`, :mod:`monitor.probeframe`,
  :mod:`monitor.prober`, :mod:`monitor.probestats`, :mod:`monitor.tomography` — active
  RoCEv2-shaped probes steered over every link by the published hash model, and the
  link-level estimate made from them.
* :mod:`monitor.localiser` (rules in :mod:`monitor.rules`, :mod:`monitor.linkrules`,
  thresholds and path bookkeeping in :mod:`monitor.pathview`) — names the faulty
  component with evidence and confidence.
* :mod:`monitor.assemble`, :mod:`monitor.service` — the evidence built from the store,
  and the monitor's evaluation loop around all of the above.
* :mod:`monitor.webstate`, :mod:`monitor.weblayout`, :mod:`monitor.web`,
  :mod:`monitor.browser` — the live web view and a headless browser to look at it.

Nothing in ``controller/``, ``host/``, ``p4sim/``, ``topo/`` or ``testbed/`` imports this
package; it may use the testbed's helpers, and ``scenarios/`` runs it on the testbed.
"""
