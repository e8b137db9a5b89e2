"""Results of a fuzz campaign: findings (an input that broke a property, with the seed
and position that reproduce it) and the counts and rates measured, as JSON.

>>> r = CampaignResult("p4rt", seed=3, size="small")
>>> r.add_finding("unknown_status", "Write answered UNKNOWN", index=17, message="...")
>>> r.ok, r.to_json()["findings"][0]["index"]
(False, 17)
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

MAX_FINDINGS = 50
"""Findings kept per campaign (a systematic bug would otherwise fill the report)."""


@dataclass(slots=True)
class Finding:
    """One input that broke a property: ``Finding("crash", "the switch exited", 12)``.

    ``index`` is the position of the input in the campaign (the frame batch, the message
    number): with the campaign's seed and size it reproduces the input.
    """

    kind: str
    what: str
    index: int
    message: str = ""
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class CampaignResult:
    """The outcome of one campaign: counts, rate, findings (``ok`` when none)."""

    campaign: str
    seed: int
    size: str
    inputs: int = 0
    elapsed_s: float = 0.0
    rate_per_s: float = 0.0
    unit: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    findings_dropped: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the campaign found nothing."""
        return not self.findings and not self.findings_dropped

    def count(self, key: str, n: int = 1) -> None:
        """Add ``n`` to the counter ``key``."""
        self.counts[key] = self.counts.get(key, 0) + n

    def add_finding(self, kind: str, what: str, *, index: int, message: str = "",
                    detail: Optional[Mapping[str, Any]] = None) -> None:
        """Record a finding (the first :data:`MAX_FINDINGS`, then only counted)."""
        if len(self.findings) >= MAX_FINDINGS:
            self.findings_dropped += 1
            return
        self.findings.append(Finding(kind, what, index, message[:2000], dict(detail or {})))

    def finish(self, inputs: int, elapsed_s: float, unit: str) -> "CampaignResult":
        """Set the totals and the rate (inputs per second)."""
        self.inputs, self.elapsed_s, self.unit = inputs, round(elapsed_s, 3), unit
        self.rate_per_s = round(inputs / elapsed_s, 1) if elapsed_s > 0 else 0.0
        return self

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (what ``--out`` holds, one per campaign)."""
        out = asdict(self)
        out["ok"] = self.ok
        return out

    def summary(self) -> str:
        """One line: campaign, inputs, rate, findings."""
        state = "ok" if self.ok else f"{len(self.findings) + self.findings_dropped} finding(s)"
        return (f"fuzz {self.campaign}: {self.inputs} {self.unit} in {self.elapsed_s:.1f} s "
                f"({self.rate_per_s:.0f} {self.unit}/s), seed {self.seed}, {state}")


class Progress:
    """A line on stderr at every tenth of a long campaign (``total`` ≥ :data:`LONG`), so a
    ``make fuzz`` that runs for minutes says where it is.

    >>> p = Progress("p4rt", 10)
    >>> p.update(5)            # short campaigns print nothing
    """

    LONG = 10_000

    def __init__(self, campaign: str, total: int) -> None:
        self.campaign, self.total = campaign, total
        self._next = total // 10
        self._t0 = time.monotonic()

    def update(self, done: int) -> None:
        """``done`` inputs sent so far."""
        if self.total < self.LONG or done < self._next:
            return
        self._next += self.total // 10
        rate = done / max(1e-9, time.monotonic() - self._t0)
        print(f"fuzz {self.campaign}: {done}/{self.total} ({rate:.0f}/s)", file=sys.stderr, flush=True)


def write_results(path: Path, results: list[CampaignResult]) -> Path:
    """Write ``{campaign: result}`` to ``path`` (parents created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({r.campaign: r.to_json() for r in results}, indent=2) + "\n")
    return path
