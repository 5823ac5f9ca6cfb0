"""`kubesched serve`: the embedded cluster behind the Kubernetes REST API.

Enough of the API server for `kubesched run` and kubectl: discovery, list /
watch / get / create / update / patch / delete of the scheduler's resources,
pods/binding, pods/status, events and leases, with resourceVersions, watch
bookmarks and 410 Gone. Unless told otherwise it also runs the built-in
scheduler on the same objects, on the real clock.
"""
