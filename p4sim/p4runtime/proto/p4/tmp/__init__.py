"""PI's ``p4.tmp`` protobuf package, for a pip-only install (no PI build): only
``p4config_pb2`` (the ``P4DeviceConfig`` wrapper that BMv2 controllers put around the
device config).

Installed by ``make venv`` beside the ``p4runtime`` package's ``p4/`` (see
``p4sim/p4runtime/proto/pyproject.toml``), so ``from p4.tmp import p4config_pb2`` works in
programs that never import p4sim, the P4 tutorials' ``p4runtime_lib`` among them.

Example::

    >>> from p4.tmp import p4config_pb2
    >>> p4config_pb2.P4DeviceConfig(device_data=b"{}").device_data
    b'{}'
"""
