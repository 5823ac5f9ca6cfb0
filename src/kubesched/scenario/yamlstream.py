"""YAML streams read exactly as `yaml.load_all(text, Loader=yaml.CSafeLoader)` reads them, several times faster.

Scenario files can hold hundreds of thousands of documents, and PyYAML's safe
loading is generic: a regex resolver runs on every plain scalar, two Python
callbacks run on every node for path resolvers nobody registered, and
SafeConstructor builds every object through generators and per-node
bookkeeping. libyaml still scans, parses and composes here, so what is valid
YAML and where an error is reported stay libyaml's. What changes:

- Plain scalars are resolved through a cache keyed by their text (with no
  path resolvers registered, resolution depends on nothing else), and the
  path-resolver callbacks are C no-ops.
- Each document's nodes become Python objects through a tight constructor for
  what SafeConstructor does the same way for every input: str, int, float,
  bool, null, timestamp and binary scalars (cached by tag and text; all are
  immutable), maps with merge keys, sequences and aliases (shared as
  SafeConstructor shares them). Anything else (another tag, a `=` key, a
  non-scalar key, a merge cycle, any exception) sends the document through
  SafeConstructor itself, on the same untouched nodes, so the result or the
  error is SafeConstructor's.
- A large stream, when a second core is idle, is split at document starts
  (`---` at the start of a line, which libyaml reads as a document start or
  rejects) and the later part is read by a forked process that sends the
  documents back pickled (exact for every type SafeConstructor makes). If any
  part fails, the stream is read again serially, skipping the documents
  already delivered, so errors (and a split libyaml would not have made) come
  out as in a serial read.

Where SafeConstructor itself fails with a Python error rather than a YAML one
(`!!int abc`, `!!bool maybe`, a timestamp offset of 30 hours), the error is
turned into a ConstructorError at the node, so that callers can report it as
malformed YAML with a line and column instead of crashing.

This module splits a stream and gathers its parts; yamlconstruct.py reads one part (the resolver and
the constructor), with the alias guard (yamlaliases.py) and duplicate keys (yamlduplicates.py).
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import os
import pickle
import queue
import re
import threading
from collections.abc import Generator
from multiprocessing.connection import Connection
from typing import Any

from kubesched.scenario.yamlaliases import EXCESSIVE_ALIASING
from kubesched.scenario.yamlconstruct import Loader, iter_serial
from kubesched.scenario.yamlduplicates import DuplicateKey, Flagged

__all__ = ["EXCESSIVE_ALIASING", "DuplicateKey", "Flagged", "Loader", "iter_documents"]

# Streams at least this long are split across processes (a few thousand manifests: below that a
# fork costs more than it saves).
PARALLEL_MIN_CHARS = 4_000_000
# The share of the stream the calling process reads itself: it also admits every document. Chosen where
# the calling process's CPU time from the fork to its last document equals the reader's (5,000 nodes and
# 150,000 pods: 0.37 leaves it waiting ~0.2 s for the reader, 0.41 keeps the reader waiting ~0.3 s).
_FIRST_SHARE = 0.39
_BATCH = 500
# A document start: "---" at the start of a line, then a blank, a line break or the end.
_DOC_START = re.compile(r"\n(?=---(?:[ \t\r\n\x85\u2028\u2029]|\Z))")


def _bounds(text: str, parts: int) -> list[int]:
    """Offsets splitting `text` at document starts into up to `parts` pieces, the first _FIRST_SHARE long."""
    bounds = [0]
    n = len(text)
    rest = (1 - _FIRST_SHARE) / (parts - 1)
    for k in range(1, parts):
        target = int(n * (_FIRST_SHARE + rest * (k - 1)))
        m = _DOC_START.search(text, max(target, bounds[-1]))
        if m is None:
            break
        bounds.append(m.end())
    bounds.append(n)
    return bounds


def _can_fork() -> bool:
    """Forking is cheap (the text is shared) but unsafe once other threads exist."""
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def second_core_idle() -> bool:
    """Whether this process may use two cores and the 1-minute load average leaves one of them idle."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if cpus < 2:
        return False
    try:
        busy = os.getloadavg()[0]
    except OSError:
        busy = 0.0
    return cpus - busy >= 0.75


def _default_workers(text: str) -> int:
    """2 for a large stream when a second core is idle: on a busy machine a second reader only adds the
    cost of pickling. (The load average counts this process too once it has been busy for a while: a
    long-running caller that wants the split asks for 2.)"""
    return 2 if len(text) >= PARALLEL_MIN_CHARS and second_core_idle() else 1


def _worker(text: str, start: int, end: int, conn: Connection) -> None:
    """A forked reader: pickled batches of documents, then ("end", None), or ("error", None).

    Batches queue up here and a thread sends them, so that reading does not stall on the pipe
    while the parent is still busy with its own share.
    """
    gc.disable()
    out: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    sender = threading.Thread(target=_send_all, args=(out, conn), daemon=True)
    sender.start()
    try:
        batch: list[Any] = []
        for doc in iter_serial(text[start:end]):
            batch.append(doc)
            if len(batch) >= _BATCH:
                out.put(pickle.dumps(("docs", batch), pickle.HIGHEST_PROTOCOL))
                batch = []
        out.put(pickle.dumps(("docs", batch), pickle.HIGHEST_PROTOCOL))
        out.put(pickle.dumps(("end", None)))
    except Exception:  # noqa: BLE001 - the parent rereads serially and reports the real error
        out.put(pickle.dumps(("error", None)))
    out.put(None)
    sender.join()
    conn.close()


def _send_all(out: queue.SimpleQueue[bytes | None], conn: Connection) -> None:
    while (msg := out.get()) is not None:
        try:
            conn.send_bytes(msg)
        except OSError:
            return


def iter_documents(text: str, workers: int | None = None) -> Generator[Any, None, None]:
    """Every document of the stream (None for an empty one), equal to what
    `yaml.load_all(text, Loader=yaml.CSafeLoader)` yields, or its error.

    `workers`: processes to read with; None: see _default_workers; 1: never fork. The
    documents, and any error, are the same whatever the number.
    """
    if workers is None:
        workers = _default_workers(text)
    bounds = _bounds(text, workers) if workers > 1 and _can_fork() else [0, len(text)]
    if len(bounds) <= 2:
        yield from iter_serial(text)
        return
    ctx = multiprocessing.get_context("fork")
    children: list[tuple[Any, Connection]] = []
    docs = iter_serial(text[: bounds[1]])
    delivered = 0
    failed = False
    try:
        try:
            for start, end in itertools.pairwise(bounds[1:]):
                recv, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_worker, args=(text, start, end, send), daemon=True)
                try:
                    proc.start()
                except OSError:
                    recv.close()
                    raise
                finally:
                    send.close()
                children.append((proc, recv))
        except OSError:
            failed = True
        while not failed:
            try:
                doc = next(docs)
            except StopIteration:
                break
            except Exception:  # noqa: BLE001 - reread serially below for the exact error
                failed = True
                break
            yield doc
            delivered += 1
        for _, recv in children:
            while not failed:
                try:
                    status, batch = pickle.loads(recv.recv_bytes())
                except (EOFError, OSError, pickle.UnpicklingError):
                    status, batch = "error", None
                if status == "end":
                    break
                if status != "docs":
                    failed = True
                    break
                for doc in batch:
                    yield doc
                    delivered += 1
    finally:
        docs.close()
        for proc, recv in children:
            recv.close()
            if proc.is_alive():
                proc.terminate()
            proc.join()
    if failed:
        yield from iter_serial(text, skip=delivered)
