"""The held-out split of the validation set, fixed before any prediction error was seen.

Per source, the runs are sorted by id and shuffled by ``random.Random(f"{SEED}:{source}")``;
the first ``ceil(HELDOUT_FRACTION · n)`` are held out. Stratifying by source keeps every
source (framework, GPU, precision family) on both sides; a fixed seed makes the split the
same on every machine. Held-out runs are never used by :mod:`sim.validation.fit` (the
fitting code takes only :func:`fit_runs`), and the bench reports both splits.

Example::

    >>> from sim.validation.dataset import load_dataset
    >>> ds = load_dataset()
    >>> held, fit = heldout_runs(ds), fit_runs(ds)
    >>> len(held) + len(fit) == len(ds.runs), len(held) >= len(ds.runs) / 3
    (True, True)
    >>> sorted({r.source for r in held}) == sorted({r.source for r in ds.runs})
    True
"""
from __future__ import annotations

import math
import random

from sim.validation.dataset import Dataset, Run

SEED = 31
HELDOUT_FRACTION = 0.4


def heldout_ids(ds: Dataset) -> set[str]:
    """Ids of the held-out runs (module docstring)."""
    by_source: dict[str, list[str]] = {}
    for r in ds.runs:
        by_source.setdefault(r.source, []).append(r.id)
    out: set[str] = set()
    for source, ids in sorted(by_source.items()):
        ids = sorted(ids)
        random.Random(f"{SEED}:{source}").shuffle(ids)
        out.update(ids[:math.ceil(HELDOUT_FRACTION * len(ids))])
    return out


def heldout_runs(ds: Dataset) -> list[Run]:
    """The held-out runs, in file order."""
    held = heldout_ids(ds)
    return [r for r in ds.runs if r.id in held]


def fit_runs(ds: Dataset) -> list[Run]:
    """The runs that may be fitted on, in file order."""
    held = heldout_ids(ds)
    return [r for r in ds.runs if r.id not in held]


__all__ = ["HELDOUT_FRACTION", "SEED", "fit_runs", "heldout_ids", "heldout_runs"]
