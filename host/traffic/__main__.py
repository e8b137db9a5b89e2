"""``python -m host.traffic``: see :mod:`host.traffic.cli`."""
import sys

from host.traffic.cli import main

sys.exit(main())
