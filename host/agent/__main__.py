"""``python -m host.agent serve ...``: see :mod:`host.agent.launch`."""
import sys

from host.agent.launch import main

sys.exit(main())
