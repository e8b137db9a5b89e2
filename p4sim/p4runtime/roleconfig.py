"""Stratum's role definition scheme for P4Runtime's ``role.config``: the message
``stratum.P4RoleConfig`` (``stratum/public/proto/p4_role_config.proto``), built here
from its field list so that p4sim needs no generated code for it.

The P4Runtime specification leaves ``role.config`` (a ``google.protobuf.Any``) to a scheme
the clients and the server agree on out of band ("Role Config"); Stratum's is the one in
use, so a client written for Stratum packs the same message:

=====================  ======  =====================================================
field                  number  meaning (Stratum's)
=====================  ======  =====================================================
``exclusive_p4_ids``   1       P4 entities only this role may write
``shared_p4_ids``      2       P4 entities this role may write, shared with others
``packet_in_filter``   3       ``{metadata_id, value}``: the PacketIns this role gets
``receives_packet_ins``4       whether this role gets PacketIns at all
``can_push_pipeline``  5       whether this role may SetForwardingPipelineConfig
=====================  ======  =====================================================

>>> cfg = P4RoleConfig(shared_p4_ids=[7], can_push_pipeline=True)
>>> packed = pack(cfg)
>>> packed.type_url
'type.googleapis.com/stratum.P4RoleConfig'
>>> unpack(packed).shared_p4_ids
[7]
"""
from __future__ import annotations

from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory

TYPE_NAME = "stratum.P4RoleConfig"
TYPE_URL = f"type.googleapis.com/{TYPE_NAME}"


def _file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="p4sim/stratum_p4_role_config.proto",
                                             package="stratum", syntax="proto3")
    msg = fdp.message_type.add(name="P4RoleConfig")
    flt = msg.nested_type.add(name="PacketFilter")
    flt.field.add(name="metadata_id", number=1, type=F.TYPE_UINT32, label=F.LABEL_OPTIONAL)
    flt.field.add(name="value", number=2, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    msg.field.add(name="exclusive_p4_ids", number=1, type=F.TYPE_UINT32, label=F.LABEL_REPEATED)
    msg.field.add(name="shared_p4_ids", number=2, type=F.TYPE_UINT32, label=F.LABEL_REPEATED)
    msg.field.add(name="packet_in_filter", number=3, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                  type_name=".stratum.P4RoleConfig.PacketFilter")
    msg.field.add(name="receives_packet_ins", number=4, type=F.TYPE_BOOL, label=F.LABEL_OPTIONAL)
    msg.field.add(name="can_push_pipeline", number=5, type=F.TYPE_BOOL, label=F.LABEL_OPTIONAL)
    return fdp


def _message_class() -> Any:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file_descriptor())
    desc = pool.FindMessageTypeByName(TYPE_NAME)
    get_class = getattr(message_factory, "GetMessageClass", None)   # protobuf >= 4.21
    if get_class is not None:
        return get_class(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


P4RoleConfig: Any = _message_class()
"""The message class (``P4RoleConfig(exclusive_p4_ids=[...], can_push_pipeline=True)``)."""


def pack(config: Any) -> any_pb2.Any:
    """``config`` packed as ``role.config`` expects it (type URL :data:`TYPE_URL`)."""
    out = any_pb2.Any()
    out.Pack(config)
    return out


def unpack(packed: any_pb2.Any) -> Any:
    """The P4RoleConfig inside ``packed``; ValueError when it holds another message or
    does not parse."""
    if packed.type_url != TYPE_URL:
        raise ValueError(f"role.config holds {packed.type_url or 'no type URL'!r}, not "
                         f"{TYPE_URL!r} (Stratum's P4RoleConfig, the scheme this switch uses)")
    msg = P4RoleConfig()
    try:
        msg.ParseFromString(packed.value)
    except Exception as exc:  # noqa: BLE001 — protobuf's DecodeError and friends
        raise ValueError(f"role.config does not parse as {TYPE_NAME}: {exc}") from None
    return msg


__all__ = ["P4RoleConfig", "TYPE_NAME", "TYPE_URL", "pack", "unpack"]
