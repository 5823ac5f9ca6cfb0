"""Example out-of-tree kubesched plugins: Coscheduling (gang scheduling by PodGroup) and GPUPacking (a Score plugin).

Each is useful on its own and written only against kubesched.plugin_api; see
examples/plugins/README.md for the configuration that enables them.
"""
