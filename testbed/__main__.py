"""``python -m testbed``: the testbed's command line (:mod:`testbed.cli`)."""
import sys

from testbed.cli import main

sys.exit(main())
