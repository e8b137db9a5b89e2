"""``python -m host.tccl plan|ports``: output, JSON, exit status 2 with a clear message."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from controller.fabric_setup import plan_fabric
from host.tccl.cli import main, parse_size
from p4src.hashmodel import FabricHashModel
from topo.model import build_fabric
from topo.spec import FabricSpec


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(argv), out, err)
    return rc, out.getvalue(), err.getvalue()


def test_parse_size() -> None:
    assert parse_size("1MiB") == 1 << 20 and parse_size("4096") == 4096 and parse_size("2GB") == 2 * 10**9


def test_plan_prints_bytes_per_tier() -> None:
    rc, out, _ = run("plan", "--spec", "blocks=2", "--size", "8MiB", "--compare")
    assert rc == 0
    assert "order=tccl" in out and "order=rank" in out and "spine" in out
    rc, out, _ = run("plan", "--spec", "blocks=2", "--size", "8MiB", "--json")
    data = json.loads(out)
    assert data[0]["bytes_per_tier"]["spine"] == 2 * 2 * 7 / 8 * (8 << 20)
    assert data[0]["ring_order"] == [0, 1, 3, 2, 4, 5, 7, 6]


def test_plan_bad_input_exit_2() -> None:
    rc, _, err = run("plan", "--spec", "blocks=2", "--rank", "b0s0:0", "--rank", "b9s0:0")
    assert rc == 2 and "unknown server 'b9s0'" in err
    rc, _, err = run("plan", "--spec", "blocks=2", "--size", "lots")
    assert rc == 2 and "bad size" in err
    rc, _, err = run("plan", "--topology", "/nonexistent/topology.json")
    assert rc == 2 and "cannot read" in err


def test_ports_prints_paths(tmp_path: Path) -> None:
    fab = build_fabric(FabricSpec(blocks=2, servers_per_block=4, rails=1, spines=4))
    fab.save(tmp_path / "topology.json")
    model = FabricHashModel({n: p.hash_model() for n, p in plan_fabric(fab).items()})
    (tmp_path / "hm.json").write_text(model.to_json())
    flows = [a for i in range(4) for a in ("--flow", f"10.0.0.{i + 1},10.1.0.{i + 1}")]
    common = ["ports", "--topology", str(tmp_path / "topology.json"), "--hash-model", str(tmp_path / "hm.json")]
    rc, out, _ = run(*common, *flows, "--json")
    assert rc == 0
    data = json.loads(out)
    assert data["balanced"] and data["max_link_load"] == 1
    assert sorted(f["path"][0] for f in data["flows"]) == ["s0", "s1", "s2", "s3"]
    rc, out, _ = run(*common, *flows)
    assert rc == 0 and "b0r0l0->s0" in out and "caps met: yes" in out
    rc, _, err = run(*common, "--flow", "10.0.0.1")
    assert rc == 2 and "SRC_IP,DST_IP" in err
    (tmp_path / "bad.json").write_text('{"version": 9, "switches": []}')
    rc, _, err = run("ports", "--topology", str(tmp_path / "topology.json"), "--hash-model",
                     str(tmp_path / "bad.json"), *flows)
    assert rc == 2 and "unsupported version" in err


def test_module_entry_point() -> None:
    proc = subprocess.run([sys.executable, "-m", "host.tccl", "plan", "--spec", "blocks=2"],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0 and "nvlink" in proc.stdout
