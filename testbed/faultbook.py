"""The fault injector's records: the parameters of each fault kind, one injected fault
(:class:`FaultRecord`) and the faults file that holds the active ones (:class:`FaultBook`,
beside the testbed state file, so ``python -m testbed down`` can undo them).

>>> parse_params("gray_link", {"loss_pct": "30"})
{'loss_pct': 30.0}
>>> faults_path_for(Path("build/testbed-state.json")).name
'testbed-state-faults.json'
"""
from __future__ import annotations

import fcntl
import json
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from topo.components import FAULT_KINDS
from testbed.errors import TestbedError

#: kind → {param: (type, default)}; ``None`` default: derived (see :func:`parse_params`)
PARAMS: dict[str, dict[str, tuple[type, Any]]] = {
    "gray_link": {"loss_pct": (float, 20.0)},
    "corruption": {"corrupt_pct": (float, 10.0), "roce_only": (bool, True)},
    "flapping_link": {"period_s": (float, 2.0), "down_s": (float, None)},
    "blackhole": {"data_plane": (bool, False)},
    "hung_switch": {},
    "slow_receiver": {},
    "wrong_ecn_threshold": {"kmin_pkts": (int, 1)},
    "dead_agent": {},
    "controller_down": {},
    "dead_tor": {},
    "dead_nic_port": {},
}



class FaultError(TestbedError):
    """A fault could not be injected or undone; the message says what and why."""



@dataclass(slots=True)
class FaultRecord:
    """One injected fault: its ``name``, ``kind``, ``target`` (a component name), the
    ``params`` used, when it started (``started_at`` epoch s, ``started_mono`` monotonic
    s), ``how`` in words, and the ``undo`` steps, executed in order.

    >>> FaultRecord("hung_switch-1", "hung_switch", "switch s1").component
    'switch s1'
    """

    name: str
    kind: str
    target: str
    params: dict[str, Any] = field(default_factory=dict)
    started_at: float = 0.0
    started_mono: float = 0.0
    how: str = ""
    undo: list[dict[str, Any]] = field(default_factory=list)

    @property
    def component(self) -> str:
        """The component a correct verdict names (the target)."""
        return self.target

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "FaultRecord":
        """Inverse of ``dataclasses.asdict``."""
        return cls(**dict(raw))


def faults_path_for(state_path: Path) -> Path:
    """The faults file of the testbed whose state file is ``state_path``."""
    return state_path.with_name(state_path.stem + "-faults.json")


def parse_params(kind: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters of ``kind``: ``given`` (strings from the command line, or values)
    converted, defaults filled in; FaultError naming an unknown one or a bad value.

    >>> parse_params("flapping_link", {"period_s": 4})
    {'period_s': 4.0, 'down_s': 2.0}
    >>> try:
    ...     parse_params("hung_switch", {"x": 1})
    ... except FaultError as exc:
    ...     print(exc)
    hung_switch takes no parameter x (it takes none)
    """
    if kind not in FAULT_KINDS:
        raise FaultError(f"unknown fault kind {kind!r} (one of {', '.join(FAULT_KINDS)})")
    spec = PARAMS[kind]
    out: dict[str, Any] = {}
    for key in given:
        if key not in spec:
            raise FaultError(f"{kind} takes no parameter {key} (it takes "
                             f"{', '.join(spec) or 'none'})")
    for key, (typ, default) in spec.items():
        raw = given.get(key, default)
        if raw is None:
            out[key] = None
            continue
        try:
            if typ is bool and isinstance(raw, str):
                if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
                    raise ValueError(raw)
                out[key] = raw.lower() in ("1", "true", "yes")
            else:
                out[key] = typ(raw)
        except (TypeError, ValueError):
            raise FaultError(f"{kind}: {key}={raw!r} is not a {typ.__name__}") from None
    if kind == "flapping_link":
        if out["period_s"] <= 0:
            raise FaultError("flapping_link: period_s must be > 0")
        if out["down_s"] is None:
            out["down_s"] = out["period_s"] / 2
        if not 0 < out["down_s"] < out["period_s"]:
            raise FaultError("flapping_link: down_s must be in (0, period_s)")
    for key in ("loss_pct", "corrupt_pct"):
        if key in out and not 0 < out[key] <= 100:
            raise FaultError(f"{kind}: {key} must be in (0, 100], got {out[key]:g}")
    if kind == "wrong_ecn_threshold" and not 0 <= out["kmin_pkts"] < 1 << 19:
        raise FaultError("wrong_ecn_threshold: kmin_pkts must be in [0, 2^19)")
    return out


# ---------------------------------------------------------------------- the file
class FaultBook:
    """The faults file: the active faults and the next number (so a name is never used
    twice while the testbed is up), read and written whole under an exclusive lock (the
    scenario and ``python -m testbed fault`` may share it); :meth:`discard` at teardown."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                data = json.loads(self.path.read_text())
            except FileNotFoundError:
                data = {"next_id": 1, "faults": []}
            except ValueError as exc:
                raise FaultError(f"{self.path}: not a faults file ({exc})") from None
            before = json.dumps(data, sort_keys=True)
            yield data
            if json.dumps(data, sort_keys=True) != before:
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
                tmp.replace(self.path)

    def discard(self) -> None:
        """Remove the file and its lock (teardown: nothing of the testbed is left)."""
        self.path.unlink(missing_ok=True)
        self.path.with_name(self.path.name + ".lock").unlink(missing_ok=True)

    def records(self) -> list[FaultRecord]:
        """The active faults, oldest first."""
        with self._locked() as data:
            return [FaultRecord.from_dict(r) for r in data["faults"]]

    def new_name(self, kind: str) -> str:
        """``<kind>-<n>`` with a number never used in this file's life."""
        with self._locked() as data:
            n = int(data.get("next_id", 1))
            data["next_id"] = n + 1
            return f"{kind}-{n}"

    def add(self, rec: FaultRecord) -> None:
        """Record an injected fault."""
        with self._locked() as data:
            data["faults"].append(asdict(rec))

    def update(self, rec: FaultRecord) -> None:
        """Replace the record of ``rec.name`` (its undo steps grew)."""
        with self._locked() as data:
            data["faults"] = [asdict(rec) if r["name"] == rec.name else r
                              for r in data["faults"]]

    def remove(self, name: str) -> None:
        """Forget fault ``name`` (undone)."""
        with self._locked() as data:
            data["faults"] = [r for r in data["faults"] if r["name"] != name]


__all__ = ["FaultBook", "FaultError", "FaultRecord", "PARAMS", "faults_path_for", "parse_params"]
