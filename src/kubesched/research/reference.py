"""The published simulator's results the runs are compared with.

hkust-adsl/kubernetes-scheduler-simulator, experiments/analysis/expected_results/
analysis_allo_discrete.csv (the data of the FGD paper's Fig. 9(a)): for the
openb default trace, tune 1.3, seeds 42-51, the mean over the ten seeds of the
GPU allocation percent at 100% and 130% of arrived workload.
"""

from __future__ import annotations

# Policy title -> (mean allocation % at 100% arrived, at 130% arrived).
PUBLISHED: dict[str, tuple[float, float]] = {
    "Random": (86.30, 87.47),
    "DotProd": (90.62, 90.85),
    "GpuClustering": (91.65, 91.88),
    "GpuPacking": (91.78, 92.00),
    "BestFit": (92.86, 93.08),
    "FGD": (95.23, 95.39),
}

# Seed 42 alone, the same file.
PUBLISHED_SEED_42: dict[str, tuple[float, float]] = {
    "Random": (86.17, 87.26),
    "DotProd": (90.34, 90.54),
    "GpuClustering": (91.33, 91.53),
    "GpuPacking": (91.37, 91.57),
    "BestFit": (92.94, 93.13),
    "FGD": (95.14, 95.29),
}
