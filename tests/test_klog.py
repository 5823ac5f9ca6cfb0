"""klog's verbosity on Python's logging: what `-v N` shows, and how each format writes a record."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys

import pytest

from kubesched import klog
from kubesched.live.logs import JsonFormatter, TextFormatter


@pytest.fixture
def capture() -> tuple[logging.Logger, io.StringIO]:
    logger = logging.getLogger("kubesched.test_klog")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(TextFormatter())
    logger.handlers[:] = [handler]
    logger.propagate = False
    yield logger, stream
    logger.handlers[:] = []


@pytest.mark.parametrize(
    ("v", "shown"),
    [(0, [0]), (1, [0, 1]), (2, [0, 1, 2]), (4, [0, 1, 2, 3, 4]), (10, [0, 1, 2, 3, 4, 5, 10])],
)
def test_v_shows_levels_up_to_it_and_warnings_always(
    capture: tuple[logging.Logger, io.StringIO], v: int, shown: list[int]
) -> None:
    logger, stream = capture
    klog.set_verbosity(logger, v)
    for level in (0, 1, 2, 3, 4, 5, 10):
        klog.info(logger, level, f"at {level}")
    logger.error("an error")
    lines = stream.getvalue().splitlines()
    assert [int(line.split('"at ')[1].rstrip('"')) for line in lines if '"at ' in line] == shown
    assert lines[-1].startswith("E") and '"an error"' in lines[-1]
    assert all(line.startswith("I") for line in lines if '"at ' in line), "klog's letter is I whatever the V"


def test_object_references_as_klog_writes_them() -> None:
    ref = klog.kobj("default/p0")
    assert ref == klog.ObjectRef("p0", "default") and str(ref) == "default/p0"
    assert str(klog.kobj("node-1")) == "node-1"
    record = logging.LogRecord("kubesched.scheduler", klog.level(2), "", 0, "Successfully bound pod to node", (), None)
    record.__dict__.update({"pod": ref, "node": "n1", "evaluatedNodes": 3})
    text = TextFormatter().format(record)
    assert text.endswith('"Successfully bound pod to node" pod="default/p0" node="n1" evaluatedNodes=3')
    doc = json.loads(JsonFormatter().format(record))
    assert doc["v"] == 2 and doc["level"] == "info"
    assert doc["pod"] == {"name": "p0", "namespace": "default"}
    record.levelno, record.levelname = logging.ERROR, "ERROR"
    doc = json.loads(JsonFormatter().format(record))
    assert "v" not in doc and doc["level"] == "error"


def test_offline_commands_print_no_log_lines_of_the_scheduler() -> None:
    # Upstream's error lines (e.g. a preemption victim another preemptor deleted first) belong in a live
    # scheduler's log; `simulate` has no log, and Python's last-resort handler must not print them bare.
    code = "import logging, kubesched; logging.getLogger('kubesched.preemption').error('Could not add condition')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr == ""
