"""The execute stage: a scenario's plan becomes real processes, and their traces a Capture.

Data flows one way through the package: program (pure text) -> draft (what faults edit)
-> plan (the launch, as data) -> launch (temp dir, network, agents, deadline), with
supervision and the node agents under it -> the run directory (rundir owns every path)
-> capture (a pure reader of that directory). The worker runtime runs inside each rank.
"""
