"""The environment every message goes through: protobuf on its compiled upb backend, a
release with the parser fixes of CVE-2025-4565 and CVE-2026-0994, the P4Runtime bindings
generated for it (p4runtime_proto, not PyPI's ``p4runtime``), and no p4runtime-shell in
.venv (it lives in .venv-shell). Run in .venv, the interpreter ``make test`` uses."""
from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

from google.protobuf import __version__ as protobuf_version
from google.protobuf.internal import api_implementation
from google.rpc import status_pb2
from p4.config.v1 import p4info_pb2
from p4.tmp import p4config_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2, p4runtime_pb2_grpc

REPO = Path(__file__).resolve().parents[1]


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3])


def test_protobuf_runs_on_upb() -> None:
    assert api_implementation.Type() == "upb", \
        f"protobuf {protobuf_version} runs its {api_implementation.Type()} backend, not upb"


def test_protobuf_has_the_parser_fixes() -> None:
    assert _version(protobuf_version) >= (6, 33, 5), protobuf_version


def test_p4runtime_bindings_are_the_generated_ones() -> None:
    for module in (p4runtime_pb2, p4runtime_pb2_grpc, p4data_pb2, p4info_pb2):
        first = Path(module.__file__).read_text().splitlines()[0]
        assert first.startswith("# Generated from the file descriptors of the P4Runtime"), \
            f"{module.__file__} is not p4runtime_proto's (make venv installs ./p4runtime_proto)"
        ours = REPO / "p4runtime_proto" / module.__name__.replace(".", "/")
        assert Path(module.__file__).read_text() == ours.with_suffix(".py").read_text(), \
            f"{module.__file__} differs from the repository's: run make venv"
    assert p4config_pb2.DESCRIPTOR.package == "p4.tmp"
    assert status_pb2.Status(code=3).code == 3
    dists = {d.metadata["Name"].lower() for d in importlib.metadata.distributions()}
    assert "p4runtime" not in dists, "PyPI's p4runtime writes the same p4/ files; remove it"


def test_p4runtime_shell_is_not_in_this_environment() -> None:
    assert importlib.util.find_spec("p4runtime_sh") is None, \
        "p4runtime-shell belongs to .venv-shell (requirements-shell.txt), not .venv"
