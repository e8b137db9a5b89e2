"""Sweeps (issue 18, item 4): ``python -m sim sweep GRID.yaml`` predicts a training job
over parallelism choices × policies × scales × seeds on a local process pool or a Dask
cluster. ``grid`` (the grid file and its points), ``run`` (evaluating points, the pools),
``report`` (CSV, markdown, plots)."""
