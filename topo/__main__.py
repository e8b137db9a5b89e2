"""Command line of the fabric description.

```
python -m topo build [--spec FILE] [--blocks N --servers N --rails N --spines N ...] \
                     --out build/topology.json [--png build/fabric.png]
python -m topo show build/topology.json          # one line per switch
```

Flags override the spec file's values; both go through the same validation, so a bad
value says which field and why. Exit status 0 on success, 2 on a bad spec or argument.

Example::

    $ python -m topo build --blocks 2 --rails 4 --out build/topology.json --png build/fabric.png
    fabric: 2 blocks x 2 servers x 4 rails = 16 GPUs; 8 leaves, 2 spines, 24 links
    wrote build/topology.json
    wrote build/fabric.png
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from topo.draw import DrawingUnavailable, draw_fabric
from topo.model import Fabric, build_fabric, load_fabric
from topo.spec import SpecError, load_spec, spec_from_dict

# CLI flag -> spec field
_FLAGS: tuple[tuple[str, str, type, str], ...] = (
    ("--blocks", "blocks", int, "blocks (pods)"),
    ("--servers", "servers_per_block", int, "servers per block"),
    ("--rails", "rails", int, "rails = NICs per server"),
    ("--spines", "spines", int, "spines"),
    ("--leaves-per-rail", "leaves_per_rail", int, "leaves per rail per block"),
    ("--uplinks-per-spine", "uplinks_per_spine", int, "links from every leaf to every spine"),
    ("--link-gbps", "link_gbps", float, "host link speed"),
    ("--uplink-gbps", "uplink_gbps", float, "leaf-spine link speed (default: --link-gbps)"),
    ("--oversubscription", "oversubscription", float, "host/uplink capacity of a leaf"),
    ("--leaf-ports", "leaf_ports", int, "leaf radix"),
    ("--spine-ports", "spine_ports", int, "spine radix"),
    ("--grpc-host", "grpc_host", str, "P4Runtime host of every switch"),
    ("--grpc-base-port", "grpc_base_port", int, "P4Runtime port of the first switch"),
    ("--ecmp-seed", "ecmp_seed", int, "salt of the per-switch ECMP seeds"),
    ("--ports-per-nic", "ports_per_nic", int, "1, or 2 (a NIC's ports on two leaves of its rail)"),
    ("--pods", "pods", int, "pods joined by core switches"),
    ("--cores", "cores", int, "core switches (a multiple of --spines: one plane per spine index)"),
    ("--core-link-gbps", "core_link_gbps", float, "spine-core link speed (default: --uplink-gbps)"),
    ("--core-ports", "core_ports", int, "core radix"),
)


def summary(fab: Fabric) -> str:
    """One line: ``fabric: 2 blocks x 2 servers x 2 rails = 8 GPUs; 4 leaves, 2 spines, 16 links``."""
    s = fab.spec
    n_links = sum(1 for _ in fab.links())
    if not s.is_extended:
        return (f"fabric: {s.blocks} blocks x {s.servers_per_block} servers x {s.rails} rails = "
                f"{s.num_gpus} GPUs; {len(fab.leaves)} leaves, {len(fab.spines)} spines, {n_links} links")
    ports = f", {s.ports_per_nic} ports per NIC" if s.ports_per_nic > 1 else ""
    return (f"fabric: {s.pods} pods x {s.blocks} blocks x {s.servers_per_block} servers x {s.rails} rails "
            f"= {s.num_gpus} GPUs{ports}; {len(fab.leaves)} leaves, {len(fab.spines)} spines, "
            f"{len(fab.cores)} cores, {n_links} links")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m topo", description="Astral-P4 fabric description")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build the fabric file (and a picture) from a spec or flags")
    b.add_argument("--spec", type=Path, help="YAML or JSON spec file (flags override its values)")
    for flag, dest, typ, text in _FLAGS:
        b.add_argument(flag, dest=dest, type=typ, default=None, help=text)
    b.add_argument("--out", type=Path, default=Path("build/topology.json"), help="topology file to write")
    b.add_argument("--png", type=Path, default=None, help="also draw the fabric to this PNG")
    s = sub.add_parser("show", help="print the switches of a fabric file")
    s.add_argument("fabric", type=Path, help="fabric file (build/topology.json)")
    return p


def _build(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {dest: getattr(args, dest) for _, dest, _, _ in _FLAGS
                                 if getattr(args, dest) is not None}
    spec = load_spec(args.spec, overrides) if args.spec else spec_from_dict(overrides, "flags")
    fab = build_fabric(spec)
    print(summary(fab))
    print(f"wrote {fab.save(args.out)}")
    if args.png is not None:
        try:
            print(f"wrote {draw_fabric(fab, args.png)}")
        except DrawingUnavailable as exc:
            print(f"skipped the picture: {exc}", file=sys.stderr)
    return 0


def _show(args: argparse.Namespace) -> int:
    fab = load_fabric(args.fabric)
    print(summary(fab))
    for sw in fab.switches:
        kinds = {k: len(sw.ports_of_kind(k)) for k in ("host", "uplink", "downlink")}
        ports = ", ".join(f"{n} {k}" for k, n in kinds.items() if n)
        print(f"{sw.name:10s} {sw.role:5s} id {sw.device_id:<5d} {sw.grpc_addr:21s} "
              f"{sw.hash_algorithm} seed {sw.ecmp_seed:#010x}  {ports}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI; returns the exit status (2 with one line on a bad spec)."""
    args = _parser().parse_args(argv)
    try:
        return _build(args) if args.cmd == "build" else _show(args)
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
