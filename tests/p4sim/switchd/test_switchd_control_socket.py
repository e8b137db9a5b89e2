"""Who may use a switch's control API (issue 28, item 5): by default a Unix socket, 0600
from its creation in a private directory, that serves only the switch's own user in the
switch's own network namespace (the kernel's peer credentials). Checked: the socket's
mode and directory, the client on ``unix:`` addresses, a switch process printing and
removing its socket; a process of another user cannot connect (the directory); a root
process in another network namespace — what a Mininet host is — is refused with a JSON
line and the refusal is counted (needs root and ``unshare``)."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from p4sim.switchd.control import ControlClient, ControlServer, private_dir
from procs import SwitchProcess

ROOT = os.geteuid() == 0


@pytest.fixture
def unix_control(rig, tmp_path: Path) -> Iterator[tuple[ControlServer, Path]]:
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    path = d / "ctl.sock"
    srv = ControlServer(rig.dev, socket_path=path)
    srv.start()
    yield srv, path
    srv.stop()


def test_the_socket_is_private_and_served_to_its_owner(unix_control) -> None:
    srv, path = unix_control
    assert stat.S_ISSOCK(path.stat().st_mode) and path.stat().st_mode & 0o777 == 0o600
    assert srv.address == f"unix:{path}"
    with ControlClient(srv.address) as c:
        assert c.ping()["ports"] == [1, 2]
        c.set_queue_rate(50, port=1)
        assert c.queue_stats(1)[1]["queues"][0]["rate_pps"] == 50.0
    assert srv.refused == 0


def test_the_default_directory_is_private() -> None:
    d = private_dir()
    st = os.lstat(d)
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o077 == 0


def test_a_switch_serves_its_control_api_on_a_private_socket_by_default() -> None:
    sw = SwitchProcess(["--no-p4", "--", "--grpc-server-addr", "127.0.0.1:0"])
    try:
        assert sw.control_addr.startswith("unix:")
        path = Path(sw.control_addr[len("unix:"):])
        assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o077 == 0
        with ControlClient(sw.control_addr) as c:
            assert "ports" in c.ping()
    finally:
        sw.stop()
    assert not path.exists()                            # removed with the switch


@pytest.mark.skipif(not ROOT, reason="needs root: a process of another user")
def test_another_user_cannot_reach_the_socket(unix_control) -> None:
    srv, path = unix_control
    code = ("import socket,sys\ns=socket.socket(socket.AF_UNIX)\n"
            f"try:\n    s.connect({str(path)!r})\nexcept PermissionError:\n    sys.exit(3)\n")
    res = subprocess.run([sys.executable, "-c", code], user=65534, group=65534, timeout=30)
    assert res.returncode == 3


@pytest.mark.skipif(not ROOT or shutil.which("unshare") is None,
                    reason="needs root and unshare: a process in another network namespace")
def test_root_in_another_network_namespace_is_refused(unix_control) -> None:
    srv, path = unix_control
    code = ("import socket\ns=socket.socket(socket.AF_UNIX)\n"
            f"s.connect({str(path)!r})\n"
            "f = s.makefile()\n"
            "try:\n"
            "    s.sendall(b'{\"cmd\": \"set_queue_rate\", \"args\": {\"rate_pps\": 1}}\\n')\n"
            "except OSError:\n"
            "    pass\n"
            "print(f.readline(), end='')\n")
    res = subprocess.run(["unshare", "--net", sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=30)
    reply = json.loads(res.stdout)
    assert reply["ok"] is False and "not in the switch's network namespace" in reply["error"]
    assert srv.refused == 1
    with ControlClient(srv.address) as c:               # the rate was not set
        assert c.queue_stats(1)[1]["queues"][0]["rate_pps"] == 0.0
