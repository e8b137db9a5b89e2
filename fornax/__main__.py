"""``python -m fornax``: see :mod:`fornax.cli`."""
import sys

from fornax.cli import main

sys.exit(main())
