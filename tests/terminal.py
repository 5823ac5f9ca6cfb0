"""A stdout that says it is a terminal: what people see, rather than the plain columns printed for a pipe."""

from __future__ import annotations

import io
import re

_SGR = re.compile(r"\x1b\[[0-9;]*m")


class Terminal(io.StringIO):
    """An in-memory terminal: rich draws its tables (and colours) on it."""

    def isatty(self) -> bool:
        return True

    def text(self) -> str:
        """What was printed, without the colours and styles, each line's trailing spaces removed."""
        return "\n".join(line.rstrip() for line in _SGR.sub("", self.getvalue()).splitlines())
