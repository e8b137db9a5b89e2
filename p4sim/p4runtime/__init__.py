"""P4Runtime for p4sim: a gRPC server that drives a :class:`p4sim.device.Device`.

* ``server.py``: ``P4RuntimeServer`` (the P4Runtime service: pipeline config, Write,
  Read, Capabilities, StreamChannel), answering as BMv2's simple_switch_grpc does unless
  ``extras=True`` (``--p4runtime-extras``; p4sim/README.md, "P4Runtime conformance");
* ``devconfig.py``: the accepted ``p4_device_config`` forms (PI's ``p4.tmp.P4DeviceConfig``
  wrapper included, decoded with the generated ``p4config_pb2.py``);
* ``idle.py``: idle-timeout notifications;
* ``arbitration.py``: primary/backup election per (device, role);
* ``packetio.py``: PacketOut / PacketIn through @controller_header headers;
* ``digests.py``: DigestList streaming and acknowledgement;
* ``entities.py``: P4Runtime entities to and from the runtime state;
* ``codec.py``: bytestrings and ``P4Data``;
* ``reqlog.py``: the request log (``logs/<switch>-p4runtime-requests.txt``).

Example::

    >>> from p4sim.p4runtime.codec import encode_bytes
    >>> encode_bytes(1, 9)
    b'\\x01'
"""
