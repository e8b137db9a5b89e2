"""The running network: how each target's switch is started and controlled.

Today this package holds what must be known once per target (p4sim, BMv2):

* :mod:`testbed.targets` — the command line of a switch process for each target (BMv2's
  ``simple_switch_grpc`` as its documentation gives it: generic options first, target
  options after ``--``), the binary checks, and where each target writes its log;
* :mod:`testbed.control` — switch control outside P4Runtime (queue rate and depth per port
  and priority, data-plane register reads for tests): p4sim's control API and BMv2's
  Thrift runtime (``simple_switch_CLI``) behind one interface.

The Mininet testbed (``testbed/net.py``, ``testbed/cli.py``), the PTF harness, the labs and
the benches start and control their switches only through these two modules.

>>> from testbed.targets import TARGETS
>>> TARGETS
('p4sim', 'bmv2')
"""
