"""topo.spec and the ``python -m topo`` CLI: spec files (YAML, JSON), flags, and the exact
message of every kind of bad spec."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from topo.__main__ import main
from topo.model import load_fabric
from topo.spec import FabricSpec, SpecError, SwitchOverride, load_spec, spec_from_dict

BAD_SPECS: list[tuple[object, str]] = [
    ([1, 2], "spec: (top level): must be a mapping of field: value, got list"),
    ({"rack": 1}, "spec: rack: unknown field (known: blocks, servers_per_block, rails, spines, "
                  "leaves_per_rail, uplinks_per_spine, link_gbps, uplink_gbps, oversubscription, "
                  "leaf_ports, spine_ports, grpc_host, grpc_base_port, election_id, ecmp_seed, "
                  "leaf_hash, spine_hash, switches, ports_per_nic, pods, cores, core_link_gbps, "
                  "core_ports, core_hash)"),
    ({"rails": 0}, "spec: rails: must be at least 1, got 0"),
    ({"spines": "two"}, "spec: spines: must be an integer, got 'two'"),
    ({"blocks": True}, "spec: blocks: must be an integer, got True"),
    ({"blocks": 2.5}, "spec: blocks: must be an integer, got 2.5"),
    ({"link_gbps": 0}, "spec: link_gbps: must be a positive number, got 0"),
    ({"link_gbps": "fast"}, "spec: link_gbps: must be a number, got 'fast'"),
    ({"blocks": 300}, "spec: blocks: at most 256 (address plan 10.<block>.<rail>.<server+1>), got 300"),
    ({"rails": 257, "leaf_ports": 512},
     "spec: rails: at most 256 (address plan 10.<block>.<rail>.<server+1>), got 257"),
    ({"servers_per_block": 254},
     "spec: servers_per_block: at most 253 (10.b.r.<server+1>/24: .254 is the gateway, .255 broadcast), "
     "got 254; use more blocks"),
    ({"servers_per_block": 2, "leaves_per_rail": 3},
     "spec: leaves_per_rail: impossible topology: 3 leaves per rail but only 2 servers per block "
     "(every leaf needs a server)"),
    ({"servers_per_block": 64},
     "spec: leaf_ports: impossible topology: a leaf needs 66 ports (64 servers + 2 spines x 1 uplinks) "
     "but leaf_ports is 64; raise leaf_ports or add leaves_per_rail"),
    ({"rails": 8, "leaf_ports": 4, "spines": 4},
     "spec: leaf_ports: impossible topology: a leaf needs 6 ports (2 servers + 4 spines x 1 uplinks) "
     "but leaf_ports is 4; raise leaf_ports or add leaves_per_rail"),
    ({"blocks": 5, "rails": 8, "uplinks_per_spine": 2},
     "spec: spine_ports: impossible topology: a spine needs 80 ports (40 leaves = 5 blocks x 8 rails x 1 "
     "leaves per rail, x 2 links) but spine_ports is 64; raise spine_ports or use fewer blocks/rails"),
    ({"uplink_gbps": 400, "oversubscription": 2},
     "spec: oversubscription: give uplink_gbps or oversubscription, not both"),
    ({"grpc_base_port": 65534}, "spec: grpc_base_port: 6 switches from port 65534 run past 65535; "
                                "lower grpc_base_port"),
    ({"grpc_host": "h:1"}, "spec: grpc_host: must be a host name or address without a port, got 'h:1'"),
    ({"leaf_hash": "xor"}, "spec: leaf_hash: must be one of crc16, crc32, got 'xor'"),
    ({"switches": [1]}, "spec: switches: must be a mapping of switch name to settings, got list"),
    ({"switches": {"s0": 5}}, "spec: switches.s0: must be a mapping of "
                              "grpc_addr/device_id/ecmp_seed/hash_algorithm, got 5"),
    ({"switches": {"s0": {"port": 1}}},
     "spec: switches.s0.port: unknown field (known: grpc_addr, device_id, ecmp_seed, hash_algorithm)"),
    ({"switches": {"s0": {"grpc_addr": "localhost"}}},
     "spec: switches.s0.grpc_addr: must be 'host:port', got 'localhost'"),
    ({"switches": {"s0": {"grpc_addr": "h:99999"}}},
     "spec: switches.s0.grpc_addr: must be 'host:port' with a port in 1..65535, got 'h:99999'"),
    ({"switches": {"s0": {"device_id": 0}}}, "spec: switches.s0.device_id: must be at least 1, got 0"),
    ({"switches": {"s0": {"ecmp_seed": 2 ** 32}}},
     "spec: switches.s0.ecmp_seed: must fit in 32 bits, got 4294967296"),
]


@pytest.mark.parametrize("data,message", BAD_SPECS, ids=[m.split(":")[1].strip() + str(i)
                                                         for i, (_, m) in enumerate(BAD_SPECS)])
def test_bad_spec_message(data: object, message: str) -> None:
    with pytest.raises(SpecError) as info:
        spec_from_dict(data)
    assert str(info.value) == message


def test_good_spec_and_dict_round_trip() -> None:
    data = {"blocks": 3, "servers_per_block": 4, "rails": 8, "spines": 4, "link_gbps": 200,
            "uplink_gbps": 400, "switches": {"s0": {"grpc_addr": "10.0.0.9:9559"}}}
    spec = spec_from_dict(data)
    assert spec == FabricSpec(blocks=3, servers_per_block=4, rails=8, spines=4, link_gbps=200.0,
                              uplink_gbps=400.0, switches={"s0": SwitchOverride(grpc_addr="10.0.0.9:9559")})
    assert spec_from_dict(spec.to_dict()) == spec
    assert spec_from_dict(None) == FabricSpec()


def test_yaml_and_json_files(tmp_path: Path) -> None:
    y = tmp_path / "fab.yaml"
    y.write_text("# a small fabric\nblocks: 2\nrails: 4\nswitches:\n  s1: {grpc_addr: 'sw1:9559'}\n")
    spec = load_spec(y)
    assert (spec.blocks, spec.rails, spec.switches["s1"].grpc_addr) == (2, 4, "sw1:9559")
    assert load_spec(y, {"rails": 2}).rails == 2
    j = tmp_path / "fab.json"
    j.write_text(json.dumps({"spines": 3}))
    assert load_spec(j).spines == 3
    j.write_text('{"spines": 3,}')
    with pytest.raises(SpecError) as info:
        load_spec(j)
    assert str(info.value) == (f"{j}: (syntax): not valid JSON: Expecting property name enclosed in double "
                               f"quotes at line 1 column 14")
    y.write_text("blocks: [2\n")
    with pytest.raises(SpecError) as info:
        load_spec(y)
    assert str(info.value) == (f"{y}: (syntax): not valid YAML: expected ',' or ']', but got "
                               f"'<stream end>' at line 2 column 1")
    y.write_text("spines: two\n")
    with pytest.raises(SpecError) as info:
        load_spec(y)
    assert str(info.value) == f"{y}: spines: must be an integer, got 'two'"
    with pytest.raises(SpecError, match=r"missing\.yaml: \(file\): cannot read: No such file"):
        load_spec(tmp_path / "missing.yaml")


def test_cli_build_show_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "build" / "fabric.json"
    assert main(["build", "--blocks", "2", "--rails", "4", "--out", str(out)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "fabric: 2 blocks x 2 servers x 4 rails = 16 GPUs; 8 leaves, 2 spines, 32 links",
        f"wrote {out}"]
    assert load_fabric(out).spec.rails == 4
    spec_file = tmp_path / "fab.yaml"
    spec_file.write_text("blocks: 3\nspines: 4\n")
    assert main(["build", "--spec", str(spec_file), "--spines", "1", "--out", str(out)]) == 0
    fab = load_fabric(out)
    assert (fab.spec.blocks, fab.spec.spines) == (3, 1)
    capsys.readouterr()
    assert main(["show", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 7 and lines[1].startswith("b0r0l0     leaf  id 1     127.0.0.1:9559")
    assert main(["build", "--servers", "100", "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        "error: flags: leaf_ports: impossible topology: a leaf needs 102 ports (100 servers + 2 spines x 1 "
        "uplinks) but leaf_ports is 64; raise leaf_ports or add leaves_per_rail\n")


def test_cli_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "fabric.png"
    assert main(["build", "--out", str(tmp_path / "f.json"), "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_shipped_spec_files() -> None:
    specs = Path(__file__).resolve().parents[2] / "topo" / "specs"
    assert load_spec(specs / "default.yaml") == FabricSpec()
    pod = load_spec(specs / "pod64k.yaml")
    assert pod.num_gpus == 65536 and pod.num_leaves == 512
