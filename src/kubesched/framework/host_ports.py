"""Host ports (schedutil.GetHostPorts, framework.HostPortInfo): the ports a pod holds and those a node has in use."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubesched.api.core import Pod


def pod_host_ports(pod: Pod) -> list[tuple[str, str, int]]:
    """The (ip, protocol, port) host ports a pod holds while it runs (schedutil.GetHostPorts).

    A regular init container has exited before the pod's containers start, so
    only sidecar (restartPolicy Always) init containers and regular containers
    keep their ports.
    """
    spec = pod.spec
    containers = spec.containers
    if spec.init_containers:  # the sidecars' ports come first
        containers = [*(c for c in spec.init_containers if c.restart_policy == "Always"), *containers]
    return [(p.host_ip, p.protocol, p.host_port) for c in containers for p in c.ports if p.host_port > 0]


DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"


def _sanitize(ip: str, protocol: str) -> tuple[str, str]:
    return ip or DEFAULT_BIND_ALL_HOST_IP, protocol or "TCP"


class HostPortInfo(dict[str, set[tuple[str, int]]]):
    """Used host ports: ip → {(protocol, port)}; 0.0.0.0 conflicts with every ip."""

    def add(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = _sanitize(ip, protocol)
        self.setdefault(ip, set()).add((protocol, port))

    def remove(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = _sanitize(ip, protocol)
        m = self.get(ip)
        if m is not None:
            m.discard((protocol, port))
            if not m:
                del self[ip]

    def check_conflict(self, ip: str, protocol: str, port: int) -> bool:
        if port <= 0:
            return False
        ip, protocol = _sanitize(ip, protocol)
        pp = (protocol, port)
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            return any(pp in m for m in self.values())
        for key in (DEFAULT_BIND_ALL_HOST_IP, ip):
            m = self.get(key)
            if m is not None and pp in m:
                return True
        return False

    def clone(self) -> HostPortInfo:
        c = HostPortInfo()
        for k, v in self.items():
            c[k] = set(v)
        return c
