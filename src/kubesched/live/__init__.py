"""Live mode: the scheduler against a real API server (`kubesched run`).

The scheduler itself does not change: it still reads a ClusterStore and calls a
client. Here the store is a mirror fed by reflectors (LIST + WATCH over HTTP)
and the client speaks the Kubernetes REST API. Network I/O runs on an asyncio
loop on a background thread; everything that touches the scheduler's cache and
queue runs on the scheduler thread.
"""
