"""p4sim/p4runtime/devconfig.py: the forms of ``p4_device_config`` p4sim accepts (its compiled
JSON and ``{"program": PATH}``, raw or in PI's ``p4.tmp.P4DeviceConfig`` as BMv2 controllers
send it) and the refusals that name them (a BMv2 JSON, an unknown form, an empty wrapper)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4sim.device import DeviceConfig
from p4sim.frontend.preprocess import preprocess
from p4sim.p4runtime.devconfig import (ACCEPTED_FORMS, DeviceConfigError, load_device_config,
                                       unwrap)
from p4sim.p4runtime.p4config_pb2 import P4DeviceConfig

PROGRAM = Path(__file__).resolve().parents[1] / "tutorials" / "ipv4_routes.p4"
COMPILED = DeviceConfig("ipv4_routes.p4", preprocess(str(PROGRAM))).to_json().encode()
BMV2_JSON = json.dumps({"header_types": [], "parsers": [], "deparsers": [],
                        "pipelines": []}).encode()


def _wrap(data: bytes, reassign: bool = True) -> bytes:
    return P4DeviceConfig(reassign=reassign, device_data=data).SerializeToString()


@pytest.mark.parametrize("config", [COMPILED, _wrap(COMPILED), _wrap(COMPILED, reassign=False),
                                    json.dumps({"program": str(PROGRAM)}).encode(),
                                    _wrap(json.dumps({"program": str(PROGRAM)}).encode())])
def test_accepted_forms_load_the_program(config: bytes) -> None:
    program, _name = load_device_config(config, allow_paths=True)
    assert list(program.state.tables) == ["RouteIngress.routes"]


@pytest.mark.parametrize("config", [json.dumps({"program": str(PROGRAM)}).encode(),
                                    _wrap(json.dumps({"program": "/etc/hostname"}).encode())])
def test_a_program_path_is_read_only_with_the_extras(config: bytes) -> None:
    with pytest.raises(DeviceConfigError, match="only with --p4runtime-extras"):
        load_device_config(config)


def test_wrapper_extras_are_ignored() -> None:
    msg = P4DeviceConfig(reassign=True, device_data=COMPILED)
    msg.extras.kv["note"] = "from a BMv2 controller"
    assert unwrap(msg.SerializeToString()) == (COMPILED, True)


@pytest.mark.parametrize("config, words", [
    (BMV2_JSON, ["p4_device_config is a BMv2 JSON"]),
    (_wrap(BMV2_JSON), ["p4.tmp.P4DeviceConfig.device_data is a BMv2 JSON"]),
    (b"\x00\x01\x02garbage", ["not a config p4sim can run"]),
    (b'["a list"]', ["expected format 'p4sim-1'"]),
    (_wrap(b""), ["p4.tmp.P4DeviceConfig.device_data is empty"]),
    (b"", ["p4_device_config is empty"]),
])
def test_refused_forms_name_the_accepted_ones(config: bytes, words: list[str]) -> None:
    with pytest.raises(DeviceConfigError) as err:
        load_device_config(config)
    for word in [*words, ACCEPTED_FORMS]:
        assert word in str(err.value), str(err.value)
