"""testbed.targets: one command line per target (BMv2's shape), and the bad-input cases —
a BMv2 binary missing or too old, a switch that exits at start — each said in one line."""
from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from testbed.targets import SwitchLaunch, TargetError, check_binary
from testbed.net import SwitchDaemon, TestbedError


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _launch(target: str, tmp_path: Path, **kw: object) -> SwitchLaunch:
    return SwitchLaunch(target, "s0", device_id=3, grpc_addr="127.0.0.1:9563",
                        interfaces={2: "s0-eth2", 1: "s0-eth1"}, log_dir=tmp_path,
                        pcap_dir=None, **kw)  # type: ignore[arg-type]


def test_target_options_only_after_the_double_dash(tmp_path: Path) -> None:
    for target in ("p4sim", "bmv2"):
        cmd = _launch(target, tmp_path).command()
        cut = cmd.index("--")
        assert cmd[cut + 1:] == ["--grpc-server-addr", "127.0.0.1:9563", "--cpu-port", "255",
                                 "--priority-queues", "8"]
        assert cmd[cmd.index("-i") + 1] == "1@s0-eth1"
    bmv2 = _launch("bmv2", tmp_path).command()
    assert bmv2[bmv2.index("--thrift-port") + 1] == "9093"          # 9090 + device id
    assert "--log-console" in bmv2 and "--log-file" not in bmv2
    assert _launch("bmv2", tmp_path).stdout_path == tmp_path / "s0.log"
    assert _launch("p4sim", tmp_path).stdout_path == tmp_path / "s0.out"
    flags = _launch("bmv2", tmp_path, p4sim_flags=("--pfc-passthrough",)).command()
    assert "--pfc-passthrough" not in flags                          # p4sim-only
    with pytest.raises(TargetError, match="unknown target 'tofino'"):
        _launch("tofino", tmp_path)


def test_bmv2_binary_missing_or_too_old(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="not found: install BMv2"):
        check_binary("bmv2", str(tmp_path / "simple_switch_grpc"))
    old = _script(tmp_path / "old_ssg", 'echo "1.14.0-abcdef"\n')
    with pytest.raises(TargetError, match="is BMv2 1.14.0; this project needs 1.15.0"):
        check_binary("bmv2", str(old))
    new = _script(tmp_path / "new_ssg", 'echo "1.15.5-9674187"\n')
    assert check_binary("bmv2", str(new)) == str(new)
    mute = _script(tmp_path / "mute_ssg", "exit 3\n")
    with pytest.raises(TargetError, match="exit status 3, no version printed"):
        check_binary("bmv2", str(mute))


def test_switch_exiting_at_start_is_one_line(tmp_path: Path) -> None:
    """A BMv2-like binary that refuses its command line: the error names the switch, the
    command line and the log's error line; the process is gone."""
    bad = _script(tmp_path / "ssg", 'echo "Error while parsing command line arguments"\n'
                                    'echo "Usage: SWITCH_NAME [options] <path to JSON config file>"\n'
                                    "exit 1\n")
    daemon = SwitchDaemon.of(_launch("bmv2", tmp_path, binary=str(bad), thrift_port=9391))
    daemon.start()
    with pytest.raises(TestbedError) as err:
        daemon.wait_ready(time.monotonic() + 30)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith("switch s0 exited at start (status 1): ")
    assert f"{bad} --no-p4 -i 1@s0-eth1" in text
    assert "last log line: 'Error while parsing command line arguments'" in text
    assert not daemon.alive()
