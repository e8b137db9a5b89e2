"""The TCCL command line: ``python -m host.tccl plan ...`` and ``python -m host.tccl ports ...``.

``plan`` prints a collective's plan with the bytes per tier (nvlink / leaf / spine) and the
α-β time; ``ports`` prints hash-orthogonal source ports for a flow set with each flow's
predicted path and the link loads. The fabric comes from the topology file
(``--topology build/topology.json``) or an inline spec (``--spec blocks=2,rails=8``); the
hash model is the controller's published JSON (``--hash-model``). Exit status 0 on
success, 2 on bad input (the message says what and why).

Example::

    $ python -m host.tccl plan --spec blocks=4,servers_per_block=32,rails=8,spines=8 \\
          --collective allreduce --size 1MiB --compare
    $ python -m host.tccl ports --topology build/topology.json --hash-model build/hash_model.json \\
          --flow 10.0.0.1,10.1.0.1 --flow 10.0.0.2,10.1.0.2
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Optional, Sequence, TextIO

from host.tccl.planner import ALGORITHMS, COLLECTIVES, ORDERS, PlanError, Planner, parse_ranks, ranks_from_fabric
from host.tccl.ports import DEFAULT_PORT_RANGE, PortPlanError, PortPlanner, flows_from_fabric
from p4src.hashmodel import FabricHashModel
from topo.model import Fabric, build_fabric, load_fabric
from topo.spec import SpecError, spec_from_dict

_UNITS = {"": 1, "B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "KB": 1000, "MB": 10**6,
          "GB": 10**9}


def parse_size(text: str) -> int:
    """``parse_size("1MiB") == 1048576``; ``ValueError`` for anything else than N[unit]."""
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"bad size {text!r} (examples: 4096, 64KiB, 1MiB, 2GB)")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def _spec_value(v: str) -> Any:
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v


def load_topology(topology: Optional[str], spec: Optional[str]) -> Fabric:
    """The fabric of ``--spec k=v,...`` when given, else of the topology file."""
    if spec:
        data = {}
        for item in spec.split(","):
            k, sep, v = item.partition("=")
            if not sep:
                raise ValueError(f"--spec: {item!r} is not key=value")
            data[k.strip()] = _spec_value(v.strip())
        return build_fabric(spec_from_dict(data, "--spec"))
    return load_fabric(topology or "build/topology.json")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m host.tccl", description="TCCL planning tools")
    sub = p.add_subparsers(dest="cmd", required=True)
    helps = {"plan": "plan a collective over the fabric: ring/tree order and its time",
             "ports": "hash-orthogonal UDP source ports for flows, from a published hash model"}
    for name in ("plan", "ports"):
        s = sub.add_parser(name, help=helps[name])
        s.add_argument("--topology", help="fabric file (default build/topology.json)")
        s.add_argument("--spec", help="inline fabric spec instead, e.g. blocks=2,rails=8,spines=8")
        s.add_argument("--json", action="store_true", help="print JSON")
    pl = sub.choices["plan"]
    pl.add_argument("--collective", choices=COLLECTIVES, default="allreduce",
                    help="the collective (default allreduce)")
    pl.add_argument("--algorithm", choices=ALGORITHMS, default="ring",
                    help="its algorithm (default ring)")
    pl.add_argument("--order", choices=ORDERS, default="tccl",
                    help="ring order: TCCL's topology-aware one, or the ranks as given (default tccl)")
    pl.add_argument("--size", default="1MiB", help="bytes per rank (1MiB, 64KiB, ...)")
    pl.add_argument("--servers", help="comma-separated servers of the job (default: all)")
    pl.add_argument("--rank", action="append", default=[], metavar="SERVER:GPU",
                    help="explicit ranks in rank order (repeat)")
    pl.add_argument("--compare", action="store_true", help="also plan the rank-order baseline")
    po = sub.choices["ports"]
    po.add_argument("--hash-model", required=True, help="published hash model JSON")
    po.add_argument("--flow", action="append", default=[], metavar="SRC_IP,DST_IP",
                    help="one flow (repeat); UDP to 4791")
    po.add_argument("--port-range", default=f"{DEFAULT_PORT_RANGE[0]}-{DEFAULT_PORT_RANGE[1]}",
                    help="source ports to choose from, LOW-HIGH (default %(default)s)")
    return p


def _plan(args: argparse.Namespace, out: TextIO) -> None:
    fabric = load_topology(args.topology, args.spec)
    if args.rank:
        ranks = parse_ranks(args.rank, fabric)
    else:
        servers = args.servers.split(",") if args.servers else None
        ranks = ranks_from_fabric(fabric, servers)
    planner = Planner(fabric, ranks)
    size = parse_size(args.size)
    orders = [args.order] + (["rank"] if args.compare and args.order != "rank" else [])
    plans = [planner.plan(args.collective, size, args.algorithm, o) for o in orders]
    if args.json:
        json.dump([{"collective": p.collective, "algorithm": p.algorithm, "order": p.order_kind,
                    "ranks": len(p.order), "size_bytes": p.size_bytes, "time_s": p.time_s,
                    "bytes_per_tier": p.bytes_per_tier, "ring_order": p.order} for p in plans], out)
        out.write("\n")
        return
    for p in plans:
        out.write(p.summary() + "\n")


def _ports(args: argparse.Namespace, out: TextIO) -> None:
    fabric = load_topology(args.topology, args.spec)
    try:
        text = Path(args.hash_model).read_text()
    except OSError as exc:
        raise ValueError(f"--hash-model {args.hash_model}: {exc.strerror or exc}") from None
    model = FabricHashModel.from_json(text)
    if not args.flow:
        raise ValueError("no flows: give --flow SRC_IP,DST_IP at least once")
    pairs = []
    for f in args.flow:
        src, sep, dst = f.partition(",")
        if not sep:
            raise ValueError(f"--flow {f!r}: expected SRC_IP,DST_IP")
        pairs.append((src.strip(), dst.strip()))
    lo, sep, hi = args.port_range.partition("-")
    if not sep or not lo.isdigit() or not hi.isdigit():
        raise ValueError(f"--port-range {args.port_range!r}: expected LOW-HIGH")
    plan = PortPlanner(model, (int(lo), int(hi))).plan(flows_from_fabric(fabric, pairs))
    if args.json:
        json.dump({"balanced": plan.balanced, "max_link_load": plan.max_link_load,
                   "flows": [{"name": f.name, "src": f.src, "dst": f.dst, "sport": f.sport,
                              "dport": f.dport, "hops": [list(h) for h in f.hops], "path": list(f.path)}
                             for f in plan.flows],
                   "links": [{"switch": s, "member": m, "flows": n, "cap": plan.link_caps[(s, m)]}
                             for (s, m), n in sorted(plan.link_loads.items())]}, out)
        out.write("\n")
        return
    out.write(f"{'flow':<6} {'src':<15} {'dst':<15} {'sport':>5}  path\n")
    for f in plan.flows:
        hops = "  ".join(f"{sw}->{m}" for sw, m in f.links)
        out.write(f"{f.name:<6} {f.src:<15} {f.dst:<15} {f.sport:>5}  {hops}\n")
    out.write(f"max link load {plan.max_link_load} (caps met: {'yes' if plan.balanced else 'NO'})\n")


def main(argv: Optional[Sequence[str]] = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Run the CLI; returns the exit status (0 ok, 2 bad input)."""
    args = _parser().parse_args(argv)
    try:
        (_plan if args.cmd == "plan" else _ports)(args, out)
    except (PlanError, PortPlanError, SpecError, ValueError, KeyError) as exc:
        err.write(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}\n")
        return 2
    return 0


__all__ = ["load_topology", "main", "parse_size"]
