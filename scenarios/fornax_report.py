"""What the FORNAX scenario measured, and its report: the timeline of the injected events
and of what the managers did, the detection times, the policy change's reach, the
connections (broken or not), sessions and CPU, and three plots.

:func:`analyse` turns the raw records (the managers' event timelines and sampled stats,
the clients' results, the times of the injections) into :class:`FornaxOutcome`; it needs
no testbed, so it is tested on its own. :func:`failures` says why a run must not end with
success (it measured nothing, a fault went unseen, a connection broke).

Example::

    >>> out = analyse(RunRecord(t0=0.0, injected={"corruption": 10.0},
    ...     timelines={"nicA": [{"t": 10.02, "event": "corrupt", "key": "vni 100 tcp ..."}]},
    ...     samples={}, clients={}, policy_change_t=None, hang=None))
    >>> out.corruption_detect_s
    0.02
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional


@dataclass(slots=True)
class RunRecord:
    """The raw records of one run: wall times of the start and of each injection, each
    NIC's manager timeline and sampled stats ``[(t, stats)]``, each client's result."""

    t0: float
    injected: dict[str, float]
    timelines: dict[str, list[dict[str, Any]]]
    samples: dict[str, list[tuple[float, dict[str, Any]]]]
    clients: dict[str, dict[str, Any]]
    policy_change_t: Optional[float]
    hang: Optional[tuple[str, float, float]]         # (nic, frozen at, thawed at)
    manager: str = "fornax"
    corrupted_key: Optional[str] = None
    policy_scopes: dict[str, list[int]] = field(default_factory=dict)
    #: (attacker, attack, code, detail) of the live attacks on a NIC (code OK: it went
    #: through), and that NIC's manager's mastership losses (before, after)
    attacks: list[tuple[str, str, str, str]] = field(default_factory=list)
    attacked_mastership: Optional[tuple[int, int]] = None


@dataclass(slots=True)
class FornaxOutcome:
    """The run's figures (None: not measured)."""

    corruption_detect_s: Optional[float] = None
    corruption_rebuilt: int = 0
    hang_detect_s: Optional[float] = None
    hang_back_s: Optional[float] = None
    fallback_frames: int = 0
    stale_rebuilt_by_vni: dict[str, int] = field(default_factory=dict)
    policy_converge_s: Optional[float] = None
    long_connections: int = 0
    long_broken: int = 0
    long_max_stall_s: float = 0.0
    short_connections: int = 0
    short_failed: int = 0
    sessions_installed: dict[str, int] = field(default_factory=dict)
    sessions_peak: dict[str, int] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)
    cpu_s_per_min: dict[str, float] = field(default_factory=dict)
    counters: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def connections_broken(self) -> int:
        """Long connections broken plus short connections that failed."""
        return self.long_broken + self.short_failed


def _first(events: list[dict[str, Any]], kind: str, after: float) -> Optional[dict[str, Any]]:
    return next((e for e in events if e["event"] == kind and e["t"] >= after - 0.001), None)


def analyse(rec: RunRecord) -> FornaxOutcome:
    """The figures of a run (see :class:`FornaxOutcome`)."""
    out = FornaxOutcome()
    if "corruption" in rec.injected:
        t = rec.injected["corruption"]
        for events in rec.timelines.values():
            hit = _first(events, "corrupt", t)
            if hit is not None:
                out.corruption_detect_s = round(hit["t"] - t, 4)
        out.corruption_rebuilt = sum(1 for ev in rec.timelines.values() for e in ev
                                     if e["event"] == "corrupt")
    if rec.hang is not None:
        nic, frozen, thawed = rec.hang
        events = rec.timelines.get(nic, [])
        hang = _first(events, "hang", frozen)
        if hang is not None:
            out.hang_detect_s = round(hang["t"] - frozen, 4)
        back = _first(events, "hardware-back", thawed)
        if back is not None:
            out.hang_back_s = round(back["t"] - thawed, 4)
            out.fallback_frames = int(back.get("software_frames", 0))
    if rec.policy_change_t is not None:
        last = None
        for events in rec.timelines.values():
            for e in events:
                if e["event"] == "rebuilt" and e.get("reason") == "stale" and \
                        e["t"] >= rec.policy_change_t:
                    vni = str(e.get("key", "")).split()[1] if e.get("key") else "?"
                    out.stale_rebuilt_by_vni[vni] = out.stale_rebuilt_by_vni.get(vni, 0) + 1
                    if e["t"] - rec.policy_change_t < 5.0:
                        last = max(last or 0.0, e["t"] - rec.policy_change_t)
        out.policy_converge_s = round(last, 4) if last is not None else None
    for res in rec.clients.values():
        for c in res.get("long", []):
            out.long_connections += 1
            out.long_broken += int(bool(c.get("broken")))
            out.long_max_stall_s = max(out.long_max_stall_s, float(c.get("max_stall_s", 0.0)))
        short = res.get("short", {})
        out.short_connections += int(short.get("count", 0))
        out.short_failed += int(short.get("failed", 0))
    for nic, samples in rec.samples.items():
        if not samples:
            continue
        first, last = samples[0], samples[-1]
        out.sessions_peak[nic] = max(int(s.get("sessions", 0)) for _, s in samples)
        counters = last[1].get("counters", {})
        out.counters[nic] = counters
        out.sessions_installed[nic] = int(counters.get("sessions_installed", 0))
        cpu = float(last[1].get("cpu_s", 0.0)) - float(first[1].get("cpu_s", 0.0))
        span = last[0] - first[0]
        out.cpu_s[nic] = round(cpu, 3)
        out.cpu_s_per_min[nic] = round(cpu * 60.0 / span, 3) if span > 0 else 0.0
    return out


def failures(rec: RunRecord, out: FornaxOutcome) -> list[str]:
    """Why the run must not report success (empty: it measured what it tells)."""
    why = []
    if out.long_connections == 0:
        why.append("no long connection ran (the clients wrote no result)")
    if out.short_connections == 0:
        why.append("no short connection ran")
    if not any(out.sessions_installed.values()):
        why.append("no manager installed a session")
    if out.connections_broken:
        why.append(f"{out.long_broken} long connection(s) broke and {out.short_failed} short "
                   "one(s) failed")
    through = [f"{who} {what}" for who, what, code, _ in rec.attacks if code in ("OK", "ERROR")]
    if through:
        why.append("attacks on a NIC went through: " + ", ".join(through))
    if rec.attacked_mastership is not None and \
            rec.attacked_mastership[1] != rec.attacked_mastership[0]:
        why.append("the attacked NIC's manager lost mastership during the attacks")
    if rec.manager == "fornax":
        if "corruption" in rec.injected and out.corruption_detect_s is None:
            why.append("the corrupted entry was never reported")
        if rec.hang is not None and out.hang_detect_s is None:
            why.append("the hang was not detected")
        if rec.hang is not None and out.hang_back_s is None:
            why.append("the hardware path was not taken back after the hang")
        if rec.policy_change_t is not None and not out.stale_rebuilt_by_vni:
            why.append("no stale session was re-evaluated after the policy change")
    return why


def render_markdown(rec: RunRecord, out: FornaxOutcome, plots: list[str]) -> str:
    """``report.md`` of a run."""
    rel = lambda t: f"{t - rec.t0:6.2f}"  # noqa: E731
    lines = [f"# FORNAX scenario ({rec.manager} manager)", "",
             "Two servers, each with a SmartNIC (one P4 switch process each), VMs of two VPCs "
             "with overlapping addresses (blue VNI 100, red VNI 200, both 10.0.0.0/24), real "
             "kernel TCP between them through VXLAN; a policy change, a corrupted session "
             "entry and a hung NIC in the middle.", "", "## Injected", "",
             "| t (s) | what |", "|---|---|"]
    for what, t in sorted(rec.injected.items(), key=lambda kv: kv[1]):
        lines.append(f"| {rel(t)} | {what} |")
    if rec.hang is not None:
        lines.append(f"| {rel(rec.hang[2])} | {rec.hang[0]} thawed (SIGCONT) |")
    lines += ["", "## Figures", "", "| figure | value |", "|---|---|",
              f"| corrupted entry reported after | {_s(out.corruption_detect_s)} |",
              f"| hang detected after | {_s(out.hang_detect_s)} |",
              f"| hardware path taken back after the thaw | {_s(out.hang_back_s)} |",
              f"| frames forwarded in software during the hang | {out.fallback_frames} |",
              f"| stale sessions re-evaluated after the policy change, by VNI | "
              f"{out.stale_rebuilt_by_vni or 'none'} |",
              f"| last of them, after the change | {_s(out.policy_converge_s)} |",
              f"| long connections (broken) | {out.long_connections} ({out.long_broken}) |",
              f"| longest stall of a long connection | {out.long_max_stall_s:.3f} s |",
              f"| short connections (failed) | {out.short_connections} ({out.short_failed}) |"]
    for nic in sorted(out.cpu_s):
        lines.append(f"| {nic}: sessions installed / peak | {out.sessions_installed.get(nic, 0)}"
                     f" / {out.sessions_peak.get(nic, 0)} |")
        lines.append(f"| {nic}: manager CPU | {out.cpu_s[nic]} s ({out.cpu_s_per_min[nic]} "
                     f"s per minute) |")
    lines += ["", "## What the managers did", "", "| t (s) | NIC | event | detail |",
              "|---|---|---|---|"]
    merged = sorted(((e["t"], nic, e) for nic, ev in rec.timelines.items() for e in ev
                     if e["event"] not in ("rebuilt",) or e.get("reason") != "stale"),
                    key=lambda x: x[0])
    for t, nic, e in merged[:200]:
        detail = ", ".join(f"{k}={v}" for k, v in e.items() if k not in ("t", "event"))
        lines.append(f"| {rel(t)} | {nic} | {e['event']} | {detail[:160]} |")
    if rec.attacks:
        lines += ["", "## Attacks on a NIC while it served traffic", "",
                  "| attacker | attack | code | detail |", "|---|---|---|---|"]
        lines += [f"| {who} | {what} | {code} | {detail[:140]} |"
                  for who, what, code, detail in rec.attacks]
        if rec.attacked_mastership is not None:
            lines.append(f"\nThe attacked NIC's manager: mastership losses "
                         f"{rec.attacked_mastership[0]} before, {rec.attacked_mastership[1]} after.")
    lines += ["", "## Counters (end of run)", ""]
    for nic, counters in sorted(out.counters.items()):
        lines.append(f"- **{nic}**: " + ", ".join(f"{k} {v}" for k, v in sorted(counters.items())))
    lines += ["", "## Connections", ""]
    for name, res in sorted(rec.clients.items()):
        for c in res.get("long", []):
            lines.append(f"- {name} → {c['target']} (port {c['local_port']}): {c['bytes']} bytes "
                         f"echoed, longest stall {c['max_stall_s']} s"
                         + (f", BROKEN: {c['error'] or 'stalled'}" if c.get("broken") else ""))
        s = res.get("short", {})
        if s.get("count"):
            lines.append(f"- {name}: {s['count']} short connections, {s['failed']} failed"
                         + (f" (first: {s['errors'][0]['error']})" if s.get("errors") else ""))
    lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def _s(v: Optional[float]) -> str:
    return "not measured" if v is None else f"{v:.3f} s"


def write_plots(run_dir: Path, rec: RunRecord) -> list[str]:
    """Sessions per NIC, echoed bytes of the long connections, manager CPU; with the
    injections marked. The file names written."""
    import matplotlib  # noqa: PLC0415 - heavy: matplotlib (only when a report is written)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy: matplotlib

    marks = dict(rec.injected)
    if rec.hang is not None:
        marks["thaw"] = rec.hang[2]
    written = []

    def mark(ax: Any) -> None:
        for what, t in marks.items():
            ax.axvline(t - rec.t0, color="grey", linestyle="--", linewidth=0.8)
            ax.text(t - rec.t0, ax.get_ylim()[1], what, rotation=90, va="top", fontsize=7)

    for name, key, ylabel in (("fornax_sessions.png", "sessions", "sessions in the NIC"),
                              ("fornax_cpu.png", "cpu_s", "manager CPU (s, cumulative)")):
        fig, ax = plt.subplots(figsize=(8, 3.2))
        for nic, samples in sorted(rec.samples.items()):
            if samples:
                c0 = float(samples[0][1].get(key, 0)) if key == "cpu_s" else 0.0
                ax.plot([t - rec.t0 for t, _ in samples],
                        [float(s.get(key, 0)) - c0 for _, s in samples], label=nic)
        ax.set_xlabel("t (s)")
        ax.set_ylabel(ylabel)
        ax.legend(loc="upper left", fontsize=8)
        mark(ax)
        fig.tight_layout()
        fig.savefig(run_dir / name, dpi=110)
        plt.close(fig)
        written.append(name)
    fig, ax = plt.subplots(figsize=(8, 3.2))
    for cname, res in sorted(rec.clients.items()):
        bin_s = float(res.get("bin_s", 0.5))
        start = float(res.get("t_start", rec.t0))
        for c in res.get("long", []):
            ys = [b / 1024 / bin_s for b in c.get("bytes_per_bin", [])]
            ax.plot([start - rec.t0 + i * bin_s for i in range(len(ys))], ys,
                    label=f"{cname}→{c['target']}")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("echoed KiB/s")
    ax.legend(loc="lower left", fontsize=7)
    mark(ax)
    fig.tight_layout()
    fig.savefig(run_dir / "fornax_long_connections.png", dpi=110)
    plt.close(fig)
    written.append("fornax_long_connections.png")
    return written


def write_report(run_dir: Path, rec: RunRecord, out: FornaxOutcome) -> list[Path]:
    """``report.md``, the plots and ``run.json`` (the raw records and the outcome)."""
    plots = write_plots(run_dir, rec)
    (run_dir / "report.md").write_text(render_markdown(rec, out, plots))
    (run_dir / "run.json").write_text(json.dumps({"record": asdict(rec),
                                                  "outcome": asdict(out)}, indent=1))
    return [run_dir / "report.md", run_dir / "run.json", *(run_dir / p for p in plots)]


__all__ = ["FornaxOutcome", "RunRecord", "analyse", "failures", "render_markdown",
           "write_plots", "write_report"]
