"""``python -m sim``: see :mod:`sim.cli`."""
import sys

from sim.cli import main

sys.exit(main())
