"""A small typed P4Runtime client (one :class:`SwitchConnection` per switch, many per
process), on which the GOR controller builds. Never imports p4sim.

Example::

    >>> from controller.p4rt import SwitchConnection
    >>> sw = SwitchConnection("127.0.0.1:9559", device_id=0, election_id=(0, 1))  # doctest: +SKIP
    >>> sw.push_pipeline("build/fabric.p4info.txtpb", "build/fabric.json")        # doctest: +SKIP
    >>> sw.close()                                                                 # doctest: +SKIP
"""
from controller.p4rt.codec import decode, encode, to_int
from controller.p4rt.connection import CounterData, DigestList, PacketIn, SwitchConnection
from controller.p4rt.entities import (clone_session, counter_entry, digest_entry, meter_entry,
                                      multicast_group, register_entry, table_entry, update)
from controller.p4rt.errors import (NotPrimaryError, P4InfoLookupError, P4RuntimeClientError,
                                    UpdateError, WriteError)
from controller.p4rt.p4info import P4InfoHelper, load_p4info
from controller.p4rt.tls import ClientTls

__all__ = [
    "SwitchConnection", "ClientTls", "P4InfoHelper", "load_p4info", "CounterData", "DigestList", "PacketIn",
    "table_entry", "update", "counter_entry", "register_entry", "multicast_group",
    "clone_session", "digest_entry", "meter_entry", "encode", "decode", "to_int", "NotPrimaryError",
    "P4InfoLookupError", "P4RuntimeClientError", "UpdateError", "WriteError",
]
