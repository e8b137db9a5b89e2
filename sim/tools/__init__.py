"""Scripts a user runs on their own GPU machine (never in CI): :mod:`sim.tools.time_kernels`."""
