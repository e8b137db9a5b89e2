"""The predictor's validation set: published training runs, their held-out split, and the
comparison of ``python -m sim predict`` against them (issue 31). See ``sim/README.md``.

* :mod:`sim.validation.dataset` — ``runs.yaml``: sources, model shapes, runs; measured times
* :mod:`sim.validation.split` — the held-out split (seed 31, per source, 40 %)
* :mod:`sim.validation.jobs` — a run as a job of ``sim predict``
* :mod:`sim.validation.validate` — predictions against measurements, the figures
"""
