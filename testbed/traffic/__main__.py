"""``python -m testbed.traffic``: see :mod:`testbed.traffic.cli`."""
import sys

from testbed.traffic.cli import main

sys.exit(main())
