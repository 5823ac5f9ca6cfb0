"""Client-side rate limiting (client-go's token bucket, from clientConnection.qps/burst).

Every request waits for a token. Upstream's defaults (qps 50, burst 100) mean a
scheduler that binds each pod with one POST and writes an event for it cannot
sustain much more than ~50 pods/s once the burst is spent; raise qps for more.
"""

from __future__ import annotations

import asyncio
import time


class TokenBucket:
    """`qps` tokens per second, at most `burst` saved up; qps <= 0 means no limit."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = max(int(burst), 1)
        self._tokens = float(self.burst)
        self._last = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now

    async def acquire(self) -> None:
        if self.qps <= 0:
            return
        while True:
            self._refill()
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return
            await asyncio.sleep((1.0 - self._tokens) / self.qps)
