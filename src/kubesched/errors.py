"""User-facing input errors: one line naming the file, the object and the field."""

from __future__ import annotations


class InputError(Exception):
    """Bad input from the user; the CLI prints `str(err)` and exits with status 2."""

    def __init__(self, source: str, message: str, obj: str = "", field: str = "") -> None:
        self.source = source
        self.obj = obj
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [self.source]
        if self.obj:
            parts.append(self.obj)
        if self.field:
            parts.append(self.field)
        return ": ".join([*parts, self.message])
