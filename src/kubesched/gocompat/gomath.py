"""Go's math package, bit for bit where scores depend on it.

Scores are compared exactly with Go's, so rounding and logarithms must give
Go's float64 results: math.Round rounds half away from zero (Python's round()
rounds half to even), and Go's math.Log (amd64, pure Go) differs from the C
library's log by one ulp on some small integers, log(3) among them, which is
enough to change a PodTopologySpread score.
"""

from __future__ import annotations

import math

import numpy as np

_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_L1 = 6.666666666666735130e-01
_L2 = 3.999999999940941908e-01
_L3 = 2.857142874366239149e-01
_L4 = 2.222219843214978396e-01
_L5 = 1.818357216161805012e-01
_L6 = 1.531383769920937332e-01
_L7 = 1.479819860511658591e-01
_HALF_SQRT2 = 7.07106781186547524401e-01


def go_log(x: float) -> float:
    """Go's math.Log: the FreeBSD e_log.c reduction and polynomial, evaluated in the same order."""
    if math.isnan(x) or x == math.inf:
        return x
    if x < 0:
        return math.nan
    if x == 0:
        return -math.inf
    f1, ki = math.frexp(x)
    if f1 < _HALF_SQRT2:
        f1 *= 2
        ki -= 1
    f = f1 - 1
    k = float(ki)
    s = f / (2 + f)
    s2 = s * s
    s4 = s2 * s2
    t1 = s2 * (_L1 + s4 * (_L3 + s4 * (_L5 + s4 * _L7)))
    t2 = s4 * (_L2 + s4 * (_L4 + s4 * _L6))
    r = t1 + t2
    hfsq = 0.5 * f * f
    return k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)


def go_round(x: float) -> float:
    """math.Round: half away from zero; a score converts it to int64 afterwards (int(go_round(x)))."""
    if math.isnan(x) or math.isinf(x):
        return x
    t: float = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += math.copysign(1.0, x)
    return float(t)


def go_round_array(x: np.ndarray) -> np.ndarray:
    """go_round over a float64 array (x - trunc(x) is exact, so the comparison is too)."""
    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= 0.5, np.copysign(1.0, x), 0.0)
