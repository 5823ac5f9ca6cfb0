"""Report data: thinning long series, heat-map columns, and the message when plotly is missing."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from kubesched.errors import InputError
from kubesched.replay.metrics import HeatMap
from kubesched.replay.report.data import thin_indices


@pytest.mark.parametrize(
    ("n", "cap", "expected"),
    [
        (5, 10, [0, 1, 2, 3, 4]),
        (11, 3, [0, 5, 10]),
        (10, 4, [0, 3, 6, 9]),
        (101, 5, [0, 25, 50, 75, 100]),
        (0, 5, []),
    ],
)
def test_thin_indices_keep_ends_and_spread_evenly(n: int, cap: int, expected: list[int]) -> None:
    assert thin_indices(n, cap) == expected


def test_heat_map_halves_its_columns_and_keeps_the_end() -> None:
    hm = HeatMap(columns=4)
    for i in range(20):
        hm.offer(float(i), lambda i=i: np.full((1, 1), float(i)))
    # Five columns at 0..4 is one too many: every 2nd kept (0, 2, 4), then every 4th at 8, every 8th at 16.
    assert hm.stride == 8
    assert hm.times == [0.0, 8.0, 16.0]
    hm.close(19.0, np.full((1, 1), 19.0))
    assert hm.times[-1] == 19.0 and hm.frames[-1][0, 0] == 19.0
    assert [f[0, 0] for f in hm.frames] == hm.times


def test_report_without_plotly_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubesched.replay.report import html

    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)
    with pytest.raises(InputError) as info:
        html.require_plotly()
    assert str(info.value) == "--report: the HTML report needs plotly: pip install 'kubesched[report]'"
