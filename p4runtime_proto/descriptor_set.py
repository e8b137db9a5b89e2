"""Write the P4Runtime release's file descriptors as one ``FileDescriptorSet``, for
``make proto`` (``protoc --descriptor_set_in``).

The P4Runtime .proto files are not copied into this repository: the release on PyPI
(``p4runtime==1.6.0``, installed with ``--no-deps`` into ``make proto``'s throw-away venv)
carries each file's ``FileDescriptorProto`` as the ``serialized_pb=`` bytes of its generated
modules. Those modules cannot be imported under protobuf's upb backend ("Descriptors cannot
be created directly"), so this script never imports them: it reads the bytes out of the
source with :mod:`ast`. ``google/protobuf/any.proto`` and ``google/rpc/status.proto``, which
``p4runtime.proto`` imports, come from the protobuf runtime and googleapis-common-protos.
protoc then generates Python for the current runtime from exactly the release's descriptors.

Usage (what ``make proto`` runs, in its venv)::

    python p4runtime_proto/descriptor_set.py 1.6.0 /tmp/p4runtime.pb
"""
from __future__ import annotations

import ast
import sys
from importlib import metadata
from pathlib import Path

from google.protobuf import any_pb2, descriptor_pb2
from google.rpc import status_pb2

#: generated modules of the release, in dependency order
MODULES = ("p4/config/v1/p4types_pb2.py", "p4/config/v1/p4info_pb2.py",
           "p4/v1/p4data_pb2.py", "p4/v1/p4runtime_pb2.py")


def serialized_file(source: str, where: str) -> bytes:
    """The ``serialized_pb=`` bytes of the module's ``FileDescriptor(...)`` call (the
    protoc 3.x form of generated code) or its ``AddSerializedFile(...)`` argument."""
    for node in ast.walk(ast.parse(source, where)):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        if name == "FileDescriptor":
            for kw in node.keywords:
                if kw.arg == "serialized_pb":
                    return ast.literal_eval(kw.value)
        if name == "AddSerializedFile" and node.args:
            return ast.literal_eval(node.args[0])
    raise SystemExit(f"{where}: no serialized file descriptor found")


def release_descriptors(release: str) -> descriptor_pb2.FileDescriptorSet:
    """any.proto, status.proto, then the four files of P4Runtime ``release`` (the
    installed ``p4runtime`` distribution, which must be that release)."""
    dist = metadata.distribution("p4runtime")
    if dist.version != release:
        raise SystemExit(f"p4runtime {dist.version} installed, {release} expected")
    out = descriptor_pb2.FileDescriptorSet()
    for module in (any_pb2, status_pb2):
        out.file.add().ParseFromString(module.DESCRIPTOR.serialized_pb)
    for rel in MODULES:
        path = Path(str(dist.locate_file(rel)))
        out.file.add().ParseFromString(serialized_file(path.read_text(), str(path)))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python p4runtime_proto/descriptor_set.py RELEASE OUT.pb", file=sys.stderr)
        return 2
    Path(argv[1]).write_bytes(release_descriptors(argv[0]).SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
