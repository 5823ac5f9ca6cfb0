"""The error kube-scheduler reports when it refuses a configuration file."""

from __future__ import annotations

from kubesched.gocompat.field import aggregate_message

STAGES = ("decode", "validate", "framework")


class ConfigError(Exception):
    """A rejected configuration.

    stage: "decode" (strict decoding), "validate" (ValidateKubeSchedulerConfiguration)
    or "framework" (building the profiles); errors: the individual errors as upstream
    formats them; message: the whole error as kube-scheduler prints it; source: the
    file (or other origin) it came from. str() is the message; `display` is
    "SOURCE: message" for a CLI.
    """

    def __init__(self, stage: str, errors: list[str], message: str | None = None, source: str = "<config>") -> None:
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}")
        self.stage = stage
        self.errors = list(errors)
        self.message = message if message is not None else aggregate_message(self.errors)
        self.source = source
        super().__init__(self.message)

    @property
    def display(self) -> str:
        return f"{self.source}: {self.message}"

    def __str__(self) -> str:
        return self.message
