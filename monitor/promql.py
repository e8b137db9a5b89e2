"""The query vocabulary both metric stores answer in (:class:`monitor.prometheus.PrometheusServer`
and :class:`monitor.embedded.EmbeddedStore`): a series as (labels, value) and the PromQL
selector of a metric with exact label matches.

>>> selector("astral_switch_up", job="switches")
'astral_switch_up{job="switches"}'
"""
from __future__ import annotations

import json
import re

Series = tuple[dict[str, str], float]
"""One series' labels (``job`` and ``instance`` included, no ``__name__``) and a value."""

NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
"""A metric name."""
LABEL_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
"""A label (or job) name."""


def selector(metric: str, **label_filter: str) -> str:
    """The PromQL selector of ``metric`` with exact label matches; ``ValueError`` on a
    name that is not a metric or label name.

    >>> selector("astral_switch_up", switch='s"0')
    'astral_switch_up{switch="s\\\\"0"}'
    >>> selector("no such")
    Traceback (most recent call last):
    ...
    ValueError: not a metric name: 'no such'
    """
    if not NAME_RE.match(metric):
        raise ValueError(f"not a metric name: {metric!r}")
    for k in label_filter:
        if not LABEL_RE.match(k):
            raise ValueError(f"not a label name: {k!r}")
    if not label_filter:
        return metric
    inner = ",".join(f"{k}={json.dumps(str(v))}" for k, v in sorted(label_filter.items()))
    return f"{metric}{{{inner}}}"


__all__ = ["LABEL_RE", "NAME_RE", "Series", "selector"]
