"""Per-path probe statistics over a window, from the probers' snapshot files: what the
monitor service hands to :func:`monitor.tomography.estimate`.

Each prober writes ``probe-<host>.json`` at every epoch boundary (:mod:`monitor.prober`):
its paths' ``sent`` (as the sender) and ``received`` / ``corrupted`` / ``ce`` (as the
receiver), totals over send times before ``epoch × interval_s``. Because every host
closes the same epochs, a path's ``sent`` at the sender and ``received`` at the receiver
at the same epoch count the same probes. :class:`ProbeStatsReader` keeps the recent
snapshots of every host and, for the latest epoch ``E`` every live host has reached,
gives each path's counts between ``E − window`` and ``E``. A host whose snapshot is more
than ``stale_epochs`` behind the newest is down: its paths as sender are left out (no
probes sent), as receiver they count what it received before (so: loss).

>>> import tempfile; from pathlib import Path
>>> from topo.model import build_fabric; from monitor.probes import plan_probes
>>> plan = plan_probes(build_fabric()); d = Path(tempfile.mkdtemp())
>>> reader = ProbeStatsReader(plan, d, window_s=2.0)
>>> reader.poll() is None                     # no snapshot yet
True
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Optional

from monitor.evidence import EpochCount, PathStats
from monitor.probeplan import ProbePlan


class ProbeStatsReader:
    """Reads ``probe-<host>.json`` of every host of ``plan`` in ``out_dir`` (module
    docstring); :meth:`poll` returns ``(epoch end in monotonic s, {path: PathStats})``.

    ``window_s`` is rounded to whole epochs (at least one).
    """

    def __init__(self, plan: ProbePlan, out_dir: Path, window_s: float = 2.0,
                 stale_epochs: int = 3, keep_epochs: int = 64) -> None:
        self.plan, self.out_dir = plan, Path(out_dir)
        self.window_s, self.stale_epochs, self.keep_epochs = window_s, stale_epochs, keep_epochs
        self.history: dict[str, dict[int, dict[str, Any]]] = {h: {} for h in plan.hosts()}
        self.interval_s: Optional[float] = None
        self.problems: dict[str, str] = {}

    def _read(self) -> None:
        for host, hist in self.history.items():
            path = self.out_dir / f"probe-{host}.json"
            try:
                snap = json.loads(path.read_text())
                epoch = int(snap["epoch"])
                self.interval_s = float(snap["interval_s"])
            except FileNotFoundError:
                continue
            except (OSError, ValueError, KeyError, TypeError) as exc:
                self.problems[host] = f"{path}: unreadable snapshot: {exc}"
                continue
            self.problems.pop(host, None)
            hist[epoch] = snap
            for old in sorted(hist)[:-self.keep_epochs]:
                del hist[old]

    @staticmethod
    def _at(hist: dict[int, dict[str, Any]], epoch: int) -> Optional[dict[str, Any]]:
        """The host's latest snapshot at or before ``epoch``."""
        keys = [k for k in hist if k <= epoch]
        return hist[max(keys)] if keys else None

    def poll(self) -> Optional[tuple[float, dict[str, PathStats]]]:
        """Read the files; the window's statistics, or None until two snapshots a window
        apart exist.

        A path's counts are taken between two epochs *both* its hosts have a snapshot of
        (the latest at or before the common end, and the latest a window before it), so
        a snapshot the reader missed at one host never pairs a sender's epoch with
        another receiver epoch."""
        self._read()
        latest = {h: max(hist) for h, hist in self.history.items() if hist}
        if not latest or self.interval_s is None:
            return None
        newest = max(latest.values())
        live = {h: e for h, e in latest.items() if newest - e <= self.stale_epochs}
        end = min(live.values())
        w = max(1, round(self.window_s / self.interval_s))
        stats: dict[str, PathStats] = {}
        for p in self.plan.paths:
            s_host, r_host = self.plan.nics[p.src_nic].host, self.plan.nics[p.dst_nic].host
            if s_host not in live:
                continue
            s_hist, r_hist = self.history[s_host], self.history[r_host]
            if r_host in live:
                common = sorted(e for e in s_hist if e <= end and e in r_hist)
            else:           # a dead receiver: what it received before counts (so: loss)
                common = sorted(e for e in s_hist if e <= end)
            if len(common) < 2:
                continue
            e1 = common[-1]
            before = [e for e in common if e <= e1 - w]
            e0 = before[-1] if before else common[0]
            s0, s1 = s_hist[e0], s_hist[e1]
            r0, r1 = self._at(r_hist, e0), self._at(r_hist, e1)
            sent = max(0, s1["sent"].get(p.name, 0) - s0["sent"].get(p.name, 0))   # restarted: 0

            def delta(kind: str) -> int:
                if r0 is None or r1 is None:
                    return 0
                return max(0, r1[kind].get(p.name, 0) - r0[kind].get(p.name, 0))

            lat = [r["latency_ms_p50"].get(p.name) for e, r in r_hist.items()
                   if e0 < e <= e1 and r_host in live]
            lat = [x for x in lat if x is not None]
            stats[p.name] = PathStats(p.name, (e1 - e0) * self.interval_s, sent,
                                      min(sent, delta("received")), delta("corrupted"),
                                      statistics.median(lat) if lat else None)
        return end * self.interval_s, stats

    def per_epoch(self, epochs: int = 8) -> dict[str, tuple[EpochCount, ...]]:
        """Each path's counts step by step over its last ``epochs`` steps, oldest first,
        from the snapshots :meth:`poll` read (no file is read here): a step goes from one
        epoch both ends have closed to the next (one epoch, or more where a snapshot was
        missed). Paths whose sender or receiver is stale are left out (a flap rule must
        not read a dead prober as a dead cable).

        >>> import tempfile; from topo.model import build_fabric; from monitor.probes import plan_probes
        >>> ProbeStatsReader(plan_probes(build_fabric()), Path(tempfile.mkdtemp())).per_epoch()
        {}
        """
        latest = {h: max(hist) for h, hist in self.history.items() if hist}
        if not latest or self.interval_s is None:
            return {}
        newest = max(latest.values())
        live = {h for h, e in latest.items() if newest - e <= self.stale_epochs}
        out: dict[str, tuple[EpochCount, ...]] = {}
        for p in self.plan.paths:
            s_host, r_host = self.plan.nics[p.src_nic].host, self.plan.nics[p.dst_nic].host
            if s_host not in live or r_host not in live:
                continue
            s_hist, r_hist = self.history[s_host], self.history[r_host]
            common = sorted(e for e in s_hist if e in r_hist)[-(epochs + 1):]
            steps = []
            for a, b in zip(common, common[1:]):
                sent = max(0, s_hist[b]["sent"].get(p.name, 0) - s_hist[a]["sent"].get(p.name, 0))
                got = max(0, r_hist[b]["received"].get(p.name, 0) - r_hist[a]["received"].get(p.name, 0))
                steps.append(EpochCount(b, b * self.interval_s, sent, min(sent, got)))
            if steps:
                out[p.name] = tuple(steps)
        return out

    def ce_counts(self) -> dict[str, int]:
        """CE-marked probes per path over the last window (for an ECN-threshold check)."""
        out: dict[str, int] = {}
        for p in self.plan.paths:
            hist = self.history[self.plan.nics[p.dst_nic].host]
            if len(hist) < 2:
                continue
            keys = sorted(hist)
            w = max(1, round(self.window_s / (self.interval_s or 1.0)))
            a, b = self._at(hist, keys[-1] - w), hist[keys[-1]]
            if a is not None:
                out[p.name] = b["ce"].get(p.name, 0) - a["ce"].get(p.name, 0)
        return out


__all__ = ["ProbeStatsReader"]
