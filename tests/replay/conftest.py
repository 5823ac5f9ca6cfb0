"""The replay tests' fixtures (defined in replay_helpers, beside their builders)."""

from replay_helpers import run_replay  # noqa: F401 - registers the fixture for every test here
