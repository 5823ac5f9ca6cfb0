"""GPU-sharing scheduling policies of the FGD paper as kube-scheduler plugins.

Written as an out-of-tree plugin package: the modules import nothing of
kubesched but `kubesched.plugin_api` (and each other). `gpushare` is the GPU
model and its Filter/Reserve plugin; `frag` the fragmentation measure; one
module per policy. POLICIES names each policy as the paper does, with the
plugin a configuration enables and the GPU choice Reserve makes for it.
"""

from __future__ import annotations

from dataclasses import dataclass

PACKAGE = __name__


@dataclass(frozen=True, slots=True)
class Policy:
    """A policy: its name in the paper, its Score plugin (import path), and GpuShare's gpuSelMethod."""

    title: str
    plugin: str
    gpu_sel_method: str


POLICIES: dict[str, Policy] = {
    "random": Policy("Random", f"{PACKAGE}.random_score:RandomScore", "random"),
    "dotprod": Policy("DotProd", f"{PACKAGE}.dot_product:DotProduct", "best"),
    "clustering": Policy("GpuClustering", f"{PACKAGE}.gpu_clustering:GpuClustering", "best"),
    "packing": Policy("GpuPacking", f"{PACKAGE}.gpu_packing:GpuPacking", "best"),
    "bestfit": Policy("BestFit", f"{PACKAGE}.best_fit:BestFit", "best"),
    "fgd": Policy("FGD", f"{PACKAGE}.fgd:FGD", f"{PACKAGE}.fgd:FGD"),
}
GPU_SHARE = f"{PACKAGE}.gpushare:GpuShare"

__all__ = ["GPU_SHARE", "POLICIES", "Policy"]
