"""Teaching labs of Astral-P4 (issue 8): six guided exercises, each a folder
``labs/NN-name/`` with a skeleton, a ``solution/`` and a checker, run by ``labs.labkit``.

Example::

    $ make -C labs/01-ecmp-hashing check
"""
