"""A picture of a fabric (PNG): spines on top, leaves grouped by block and coloured by
rail, servers at the bottom with one coloured link per NIC/rail.

Uses matplotlib (Agg backend, no display needed). Big fabrics are drawn without labels
and, above :data:`MAX_DRAWN_HOSTS` servers, without the server row.

Example::

    >>> from topo.model import FabricSpec, build_fabric
    >>> draw_fabric(build_fabric(FabricSpec()), "/tmp/fabric.png")   # doctest: +SKIP
    PosixPath('/tmp/fabric.png')
"""
from __future__ import annotations

from pathlib import Path
from typing import Union

from topo.model import Fabric

MAX_DRAWN_HOSTS = 256
MAX_LABELLED_SWITCHES = 48


class DrawingUnavailable(RuntimeError):
    """matplotlib is not installed: ``pip install matplotlib`` (it is in requirements.txt)."""


def _positions(fab: Fabric, with_hosts: bool) -> dict[str, tuple[float, float]]:
    """x, y of every drawn node: cores y=3, spines y=2, leaves y=1, hosts y=0; x in [0, 1]."""
    pos: dict[str, tuple[float, float]] = {}
    leaves = fab.leaves
    n_leaf = max(len(leaves), 1)
    gap_blocks = 0.5                     # extra space between blocks, in leaf slots
    slots = n_leaf + gap_blocks * (fab.spec.blocks * fab.spec.pods - 1)
    x = 0.0
    prev_block = None
    for leaf in leaves:
        if prev_block is not None and (leaf.pod, leaf.block) != prev_block:
            x += gap_blocks
        prev_block = (leaf.pod, leaf.block)
        pos[leaf.name] = ((x + 0.5) / slots, 1.0)
        x += 1
    spines = fab.spines
    for i, sp in enumerate(spines):
        pos[sp.name] = ((i + 0.5) / max(len(spines), 1), 2.0)
    cores = fab.cores
    for i, core in enumerate(cores):
        pos[core.name] = ((i + 0.5) / max(len(cores), 1), 3.0)
    if with_hosts:
        by_block: dict[tuple[int, int], list[str]] = {}
        for h in fab.hosts:
            by_block.setdefault((h.pod, h.block), []).append(h.name)
        for b, names in by_block.items():
            xs = [pos[leaf.name][0] for leaf in leaves if (leaf.pod, leaf.block) == b]
            lo, hi = min(xs), max(xs)
            span = hi - lo
            for i, name in enumerate(names):
                frac = (i + 0.5) / len(names)
                pos[name] = (lo + span * frac if span else lo, 0.0)
    return pos


def draw_fabric(fab: Fabric, path: Union[str, Path], title: str = "") -> Path:
    """Write a PNG of ``fab`` to ``path`` (folders created) and return the path.

    Raises :class:`DrawingUnavailable` when matplotlib cannot be imported.
    """
    try:
        import matplotlib  # noqa: PLC0415 — heavy: matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415 — heavy: matplotlib
        from matplotlib.collections import LineCollection  # noqa: PLC0415 — heavy: matplotlib
        from matplotlib.lines import Line2D  # noqa: PLC0415 — heavy: matplotlib
    except ImportError as exc:
        raise DrawingUnavailable(f"cannot draw the fabric: {exc}; install matplotlib "
                                 f"(.venv/bin/pip install -r requirements.txt)") from None

    with_hosts = len(fab.hosts) <= MAX_DRAWN_HOSTS
    pos = _positions(fab, with_hosts)
    rails = fab.spec.rails
    cmap = plt.get_cmap("tab10" if rails <= 10 else "tab20")
    colour = [cmap(r % cmap.N) for r in range(rails)]

    fig, ax = plt.subplots(figsize=(min(4 + 0.35 * len(fab.leaves), 24), 6), dpi=110)
    fabric_segs = []
    host_segs: list[list[tuple[float, float]]] = []
    host_cols = []
    for link in fab.links():
        if link.kind == "fabric":
            fabric_segs.append([pos[link.a], pos[link.b]])
        elif with_hosts:
            host_segs.append([pos[link.a], pos[link.b]])
            host_cols.append(colour[link.b_port])
    ax.add_collection(LineCollection(fabric_segs, colors="0.6", linewidths=0.6, zorder=1))
    if host_segs:
        ax.add_collection(LineCollection(host_segs, colors=host_cols, linewidths=0.8, zorder=1))

    sp = fab.spines
    if fab.cores:
        ax.scatter([pos[c.name][0] for c in fab.cores], [3.0] * len(fab.cores), s=220, marker="D",
                   c="0.1", zorder=3)
    ax.scatter([pos[s.name][0] for s in sp], [2.0] * len(sp), s=220, marker="s", c="0.25", zorder=3)
    lv = fab.leaves
    ax.scatter([pos[s.name][0] for s in lv], [1.0] * len(lv), s=160, marker="s",
               c=[colour[s.rail or 0] for s in lv], edgecolors="black", zorder=3)
    if with_hosts:
        ax.scatter([pos[h.name][0] for h in fab.hosts], [0.0] * len(fab.hosts), s=90, marker="o",
                   c="white", edgecolors="black", zorder=3)
    if len(fab.switches) <= MAX_LABELLED_SWITCHES:
        for s in fab.switches:
            x, y = pos[s.name]
            ax.annotate(s.name, (x, y), textcoords="offset points", xytext=(0, 11), ha="center",
                        fontsize=7)
        if with_hosts and len(fab.hosts) <= MAX_LABELLED_SWITCHES:
            for h in fab.hosts:
                x, y = pos[h.name]
                ax.annotate(h.name, (x, y), textcoords="offset points", xytext=(0, -15), ha="center",
                            fontsize=7)
    spec = fab.spec
    pods = f"{spec.pods} pods x " if spec.pods > 1 else ""
    cores = f", {len(fab.cores)} cores" if fab.cores else ""
    ports = f", {spec.ports_per_nic} ports per NIC" if spec.ports_per_nic > 1 else ""
    ax.set_title(title or (f"{pods}{spec.blocks} blocks x {spec.servers_per_block} servers x {spec.rails} rails, "
                           f"{len(lv)} leaves, {len(sp)} spines{cores} ({spec.num_gpus} GPUs{ports})"
                           + ("" if with_hosts else "; servers not drawn")), fontsize=9)
    handles = [Line2D([], [], color=colour[r], lw=3, label=f"rail {r}") for r in range(min(rails, 16))]
    ax.legend(handles=handles, loc="upper right", fontsize=7, ncol=min(rails, 8), frameon=False,
              bbox_to_anchor=(1.0, 1.12))
    ax.set_xlim(-0.02, 1.02)
    top = 3 if fab.cores else 2
    ax.set_ylim(-0.4 if with_hosts else 0.6, top + 0.4)
    ticks = ([0] if with_hosts else []) + list(range(1, top + 1))
    ax.set_yticks(ticks)
    ax.set_yticklabels([["servers", "leaves", "spines", "cores"][t] for t in ticks])
    ax.set_xticks([])
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


__all__ = ["DrawingUnavailable", "MAX_DRAWN_HOSTS", "draw_fabric"]
