"""``p4.tmp.p4config_pb2`` for pip-only controllers: importable by a program that never
imports p4sim (as the tutorials' ``p4runtime_lib`` imports it), beside the ``p4runtime``
package's ``p4``; PI's field numbers; the installed copy is the repository's generated
file (``make venv`` reinstalls it when it changes); p4sim uses the same message class."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from p4sim.p4runtime import p4config_pb2 as p4sim_p4config

REPO_COPY = p4sim_p4config.REPO_P4_DIR / "tmp" / "p4config_pb2.py"


def test_importable_without_p4sim_beside_p4runtime() -> None:
    code = ("import sys; from p4.tmp import p4config_pb2; from p4.v1 import p4runtime_pb2; "
            "assert 'p4sim' not in sys.modules; print(p4config_pb2.__file__)")
    res = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr + " (make venv installs p4sim-p4tmp)"
    installed = Path(res.stdout.strip())
    assert installed.read_bytes() == REPO_COPY.read_bytes(), \
        f"{installed} differs from {REPO_COPY}: run make venv"


def test_pi_field_numbers() -> None:
    fields = {f.name: (f.number, f.type) for f in p4sim_p4config.P4DeviceConfig.DESCRIPTOR.fields}
    d = p4sim_p4config.P4DeviceConfig.DESCRIPTOR.fields_by_name["reassign"]
    assert fields == {"reassign": (1, d.TYPE_BOOL), "extras": (2, d.TYPE_MESSAGE),
                      "device_data": (3, d.TYPE_BYTES)}
    assert p4sim_p4config.P4DeviceConfig.DESCRIPTOR.full_name == "p4.tmp.P4DeviceConfig"
    kv = p4sim_p4config.P4DeviceConfig.Extras.DESCRIPTOR.fields_by_name["kv"]
    assert kv.number == 1 and kv.message_type.GetOptions().map_entry
    # the bytes p4runtime_lib's buildDeviceConfig sends for a two-byte file
    msg = p4sim_p4config.P4DeviceConfig(reassign=True, device_data=b"{}")
    msg.extras.kv["k"] = "v"
    assert msg.SerializeToString() == b"\x08\x01\x12\x08\x0a\x06\x0a\x01k\x12\x01v\x1a\x02{}"


def test_one_class_for_p4sim_and_controllers() -> None:
    from p4.tmp import p4config_pb2

    assert p4config_pb2.P4DeviceConfig is p4sim_p4config.P4DeviceConfig
