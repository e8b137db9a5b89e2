"""``python -m sim predict JOB.yaml``: performance prediction of one training iteration
(issue 18, item 1) — the operator graph of a Megatron-style LLM job (dense or MoE; TP, PP
with 1F1B or interleaved schedules, DP with ZeRO 0-3, EP, CP) timed kernel by kernel by a
roofline model with efficiency factors, its collectives on NVLink or simulated on the
fabric under random ECMP / TCCL / TCCL+GOR (the rest of :mod:`sim`), the pipeline
schedule simulated op by op. See ``sim/README.md``.

* :mod:`sim.predict.job` — the job file: schema, validation, errors naming the field
* :mod:`sim.predict.gpus` — GPU presets from the datasheets
* :mod:`sim.predict.kernels`, :mod:`sim.predict.graph` — kernels, their time model, the per-layer graph
* :mod:`sim.predict.memory` — parameters and memory per GPU
* :mod:`sim.predict.comm` — process groups, collective times (NVLink / TCCL dual channel / fabric)
* :mod:`sim.predict.stages`, :mod:`sim.predict.schedule` — pass times, pipeline schedules
* :mod:`sim.predict.predict` — one prediction; :mod:`sim.predict.breakdown`, :mod:`sim.predict.report`,
  :mod:`sim.predict.trace` — what it reports
* :mod:`sim.predict.reference` — published measurements the predictions are checked against
* :mod:`sim.predict.kineto`, :mod:`sim.predict.opcal` — ``calibrate-ops``: factors fitted to measured kernels
* :mod:`sim.predict.monitoring`, :mod:`sim.predict.fitting`, :mod:`sim.predict.runcal` — ``calibrate-run``:
  factors fitted to the monitored iteration times of whole runs

Example::

    >>> from sim.predict.schedule import bubble_fraction
    >>> bubble_fraction(16, 192)
    0.078125
"""
