"""Share the topology plugins' test harness, which lives next to the InterPodAffinity tests."""

import sys
from pathlib import Path

_HARNESS_DIR = str(Path(__file__).resolve().parent.parent / "interpodaffinity")
if _HARNESS_DIR not in sys.path:
    sys.path.insert(0, _HARNESS_DIR)
