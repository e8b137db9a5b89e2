"""FORNAX's SmartNIC data plane: ``smartnic.p4`` (v1model) and its contract
(:mod:`p4src.smartnic.model`: names, encodings, a bit-exact model of the session key,
the check code and the TCP state machine). See ``p4src/smartnic/README.md``.
"""
