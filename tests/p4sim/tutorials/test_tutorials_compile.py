"""``p4sim-p4c-bm2-ss`` and ``p4sim-p4c``: the tutorials' compile command lines work, the
compiled JSON is p4sim's device config (what ``python -m p4sim compile --config`` writes and
what the switch loads), the P4Info is written in every format p4c knows by suffix, and bad
command lines or programs fail with a message (exit 1), never a traceback."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

from p4sim.device import DeviceConfig
from tutorials_support import PROGRAM, run, script


def _p4info_text(path: Path) -> p4info_pb2.P4Info:
    return text_format.Parse(path.read_text(), p4info_pb2.P4Info())


def test_makefile_shape_writes_what_p4sim_compile_writes(tmp_path: Path) -> None:
    """utils/Makefile: $(P4C) --p4v 16 --p4runtime-files build/x.p4.p4info.txtpb
    -o build/x.json x.p4"""
    res = run([script("p4sim-p4c-bm2-ss"), "--p4v", "16", "--p4runtime-files",
               "build/ipv4_routes.p4.p4info.txtpb", "-o", "build/ipv4_routes.json", PROGRAM],
              tmp_path)
    assert res.returncode == 0, res.stderr
    ref = run([script("p4sim"), "compile", PROGRAM, "--p4info", "ref.txtpb",
               "--config", "ref.json"], tmp_path)
    assert ref.returncode == 0, ref.stderr
    assert _p4info_text(tmp_path / "build/ipv4_routes.p4.p4info.txtpb") == \
        _p4info_text(tmp_path / "ref.txtpb")
    ours = DeviceConfig.from_json((tmp_path / "build/ipv4_routes.json").read_text())
    theirs = DeviceConfig.from_json((tmp_path / "ref.json").read_text())
    assert (ours.format, ours.name, ours.source) == (theirs.format, theirs.name, theirs.source)


def test_driver_shape_writes_into_the_output_folder(tmp_path: Path) -> None:
    """runptf.sh: p4c --target bmv2 --arch v1model --p4runtime-files F -o build x.p4, plus
    P4Info in JSON and binary (format by suffix, as p4c)."""
    res = run([script("p4sim-p4c"), "--target", "bmv2", "--arch", "v1model", "--std", "p4-16",
               "--p4runtime-files", "build/r.p4info.txtpb,build/r.p4info.json,build/r.p4info.bin",
               "-o", "build", PROGRAM], tmp_path)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in (tmp_path / "build").iterdir()) == [
        "ipv4_routes.json", "ipv4_routes.p4i", "r.p4info.bin", "r.p4info.json", "r.p4info.txtpb"]
    text = _p4info_text(tmp_path / "build/r.p4info.txtpb")
    as_json = (tmp_path / "build/r.p4info.json").read_text()
    assert json_format.Parse(as_json, p4info_pb2.P4Info()) == text
    assert p4info_pb2.P4Info.FromString((tmp_path / "build/r.p4info.bin").read_bytes()) == text
    assert [t.preamble.name for t in text.tables] == ["RouteIngress.routes"]
    conf = json.loads((tmp_path / "build/ipv4_routes.json").read_text())
    assert conf["format"] == "p4sim-1"
    assert (tmp_path / "build/ipv4_routes.p4i").read_text() == conf["source"]


def test_defines_reach_the_preprocessor(tmp_path: Path) -> None:
    src = PROGRAM.read_text().replace("size = 1024;", "size = TABLE_SIZE;")
    (tmp_path / "sized.p4").write_text(
        "#ifndef __TARGET_BMV2__\n#error p4c-bm2-ss defines __TARGET_BMV2__\n#endif\n" + src)
    res = run([script("p4sim-p4c-bm2-ss"), "-DTABLE_SIZE=77", "-I", str(PROGRAM.parent),
               "--p4runtime-files", "s.txtpb", "-o", "s.json", "sized.p4"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert _p4info_text(tmp_path / "s.txtpb").tables[0].size == 77


@pytest.mark.parametrize("args, message", [
    (["--std", "p4-14"], "P4_16 only"),
    (["--p4v", "14"], "P4_16 only"),
    (["--arch", "psa"], "architecture 'psa' is not supported"),
    (["--target", "tofino"], "target 'tofino' is not supported"),
    (["--p4runtime-files", "x.p4info.yaml"], "unknown file kind"),
    (["--no-such-option"], "unrecognized arguments"),
])
def test_refused_command_lines(tmp_path: Path, args: list[str], message: str) -> None:
    res = run([script("p4sim-p4c-bm2-ss"), *args, "-o", "x.json", PROGRAM], tmp_path)
    assert res.returncode == 1
    assert message in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert not (tmp_path / "x.json").exists()


def test_program_error_is_located_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "bad.p4").write_text(
        PROGRAM.read_text().replace("hdr.ipv4.ttl - 1", "hdr.ipv4.no_such_field - 1"))
    res = run([script("p4sim-p4c"), "--p4runtime-files", "build/b.txtpb", "-o", "build",
               "bad.p4"], tmp_path)
    assert res.returncode == 1
    assert "bad.p4:" in res.stderr and "error" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    assert not (tmp_path / "build").exists()


def test_warnings_are_printed_as_p4c_prints_them_and_wdisable_silences_them(tmp_path: Path) -> None:
    (tmp_path / "w.p4").write_text(PROGRAM.read_text() + "\nconst bit<8> NEVER_USED = 1;\n")
    res = run([script("p4sim-p4c-bm2-ss"), "-o", "w.json", "w.p4"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert "[--Wwarn=unused] warning: 'NEVER_USED' is unused" in res.stderr, res.stderr
    quiet = run([script("p4sim-p4c"), "--Wdisable", "-o", "build", "w.p4"], tmp_path)
    assert quiet.returncode == 0 and "warning" not in quiet.stderr, quiet.stderr
    kind = run([script("p4sim-p4c"), "--Wdisable=unused", "-o", "build", "w.p4"], tmp_path)
    assert kind.returncode == 0 and "NEVER_USED" not in kind.stderr, kind.stderr
