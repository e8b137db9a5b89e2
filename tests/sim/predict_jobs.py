"""Small job dicts for the tests of ``sim.predict`` (a test helper, not product code)."""
from __future__ import annotations

import copy
from typing import Any

SMALL: dict[str, Any] = {
    "name": "small",
    "model": {"layers": 4, "hidden": 1024, "heads": 16, "seq_length": 1024, "vocab": 32000},
    "parallel": {"tp": 2, "pp": 2, "dp": 2},
    "training": {"global_batch": 16, "micro_batch": 1, "precision": "bf16"},
    "gpu": {"preset": "H800"},
    "fabric": {"spec_file": "topo/specs/default.yaml"},
    "network": {"policy": "tccl"},
}


def small(**sections: dict[str, Any]) -> dict[str, Any]:
    """``SMALL`` with some fields of some sections replaced: ``small(parallel={"tp": 4})``."""
    d = copy.deepcopy(SMALL)
    for name, fields in sections.items():
        if fields is None:
            d.pop(name, None)
        elif isinstance(fields, dict) and isinstance(d.get(name), dict):
            d[name].update(fields)
        else:
            d[name] = fields
    return d
