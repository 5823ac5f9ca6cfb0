"""Research on scheduling policies: GPU sharing, the openb trace, the FGD paper's six policies.

`policies` holds the GPU model and the policies as plugins; `openb` reads the
trace and builds the reference simulator's workload; `run` replays it under a
policy and a seed on kubesched's Scheduler; `curve` computes the allocation
curve as the paper's analysis does. `kubesched sweep` runs a grid of them:
`grid` (the cells), `sweep` (local processes or Ray tasks), `table` (the tidy
table), `sweep_report` (the figures), `sweep_command` (the command). See
docs/research.md.
"""
