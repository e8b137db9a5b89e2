"""Reading the switches, for GOR and the monitor alike: port counters over P4Runtime and
the poller that turns them into per-link samples, and the Prometheus exposition every
exporter serves. Imports nothing of :mod:`controller.gor` or ``monitor/``.

* :mod:`~controller.telemetry.counters` — readings, deltas, utilisation, link samples;
* :mod:`~controller.telemetry.counter_reader` — one switch's counters in one P4Runtime Read;
* :mod:`~controller.telemetry.poller` — :class:`TelemetryPoller`, every switch each period;
* :mod:`~controller.telemetry.series` — the time series of the polled links;
* :mod:`~controller.telemetry.exposition` — :class:`RegistryServer`, :func:`parse_metrics`.

>>> from controller.telemetry.counters import QDEPTH_BINS
>>> QDEPTH_BINS
16
"""
