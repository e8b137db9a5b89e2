"""The cluster: pods of a multi-rail leaf/spine fabric joined by a core tier (issue 18,
item 3). ``spec`` (the cluster file, the address plan), ``fabric`` (every pod's links
numbered, the core's links, the hash model extended to the core), ``ports`` (TCCL's
colouring across pods, GOR on the core links), ``allreduce`` (the hierarchical DP
AllReduce of ``python -m sim allreduce``)."""
