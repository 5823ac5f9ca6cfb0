"""Containers and init containers of a pod (core validation's validateContainers and friends).

Names, images, ports and resources, in the order the API server checks them. The server has
defaulted the pod first: a port's empty protocol is TCP, and with hostNetwork an unset hostPort is
the containerPort; the checks read those defaults without changing the object.

A container's `restartPolicy` is not checked: with v1.34's default feature gates the API server
drops it (keeping only `Always` on init containers) before validating.
"""

from __future__ import annotations

import re
from functools import lru_cache

from kubesched.api.core import Container, ContainerPort
from kubesched.api.validation.meta import name_is_dns_label
from kubesched.api.validation.pod_resources import validate_container_resources
from kubesched.gocompat.field import FieldError, duplicate, index, invalid, not_supported, required
from kubesched.gocompat.names import max_len_error

_PROTOCOLS = ("SCTP", "TCP", "UDP")  # sets.List(supportedPortProtocols)
_PORT_RANGE = "must be between 1 and 65535, inclusive"
_PORT_NAME_CHARSET = re.compile(r"[-a-z0-9]+")
_PORT_NAME_LETTER = re.compile(r"[a-z]")


@lru_cache(maxsize=1 << 10)
def _port_name_messages(name: str) -> tuple[str, ...]:
    """validation.IsValidPortName: an IANA service name."""
    msgs = []
    if len(name) > 15:
        msgs.append(max_len_error(15))
    if not _PORT_NAME_CHARSET.fullmatch(name):
        msgs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(name):
        msgs.append("must contain at least one letter (a-z)")
    if "--" in name:
        msgs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        msgs.append("must not begin or end with a hyphen")
    return tuple(msgs)


def host_port(port: ContainerPort, host_network: bool) -> int:
    """The hostPort after defaulting: with hostNetwork, an unset one is the containerPort."""
    return port.container_port if host_network and port.host_port == 0 else port.host_port


def _validate_ports(ports: list[ContainerPort], path: str, host_network: bool) -> list[FieldError]:
    """validateContainerPorts: unique valid names, port numbers in range, a supported protocol."""
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, port in enumerate(ports):
        p = index(path, i)
        if port.name:
            msgs = _port_name_messages(port.name)
            if msgs:
                errs += [invalid(p + ".name", port.name, m) for m in msgs]
            elif port.name in names:
                errs.append(duplicate(p + ".name", port.name))
            else:
                names.add(port.name)
        if port.container_port == 0:
            errs.append(required(p + ".containerPort"))
        elif not 1 <= port.container_port <= 65535:
            errs.append(invalid(p + ".containerPort", port.container_port, _PORT_RANGE))
        hp = host_port(port, host_network)
        if hp != 0 and not 1 <= hp <= 65535:
            errs.append(invalid(p + ".hostPort", hp, _PORT_RANGE))
        protocol = port.protocol or "TCP"
        if protocol not in _PROTOCOLS:
            errs.append(not_supported(p + ".protocol", protocol, list(_PROTOCOLS)))
    return errs


def _validate_common(
    c: Container, path: str, claim_names: frozenset[str], host_network: bool, is_pod: bool
) -> list[FieldError]:
    """validateContainerCommon, for the fields the scheduler reads: name, image, ports, resources."""
    errs: list[FieldError] = []
    if not c.name:
        errs.append(required(path + ".name"))
    else:
        msgs = name_is_dns_label(c.name, False)
        if msgs:
            errs += [invalid(path + ".name", c.name, m) for m in msgs]
    if not c.image:
        errs.append(required(path + ".image"))
    if c.ports:
        errs += _validate_ports(c.ports, path + ".ports", host_network)
    errs += validate_container_resources(c, claim_names, path + ".resources", is_pod)
    return errs


def _host_port_conflicts(
    containers: list[Container], path: str, host_network: bool, seen: set[str]
) -> list[FieldError]:
    """AccumulateUniqueHostPorts: one container per protocol/hostIP/hostPort."""
    errs: list[FieldError] = []
    for ci, c in enumerate(containers):
        for pi, port in enumerate(c.ports):
            hp = host_port(port, host_network)
            if hp == 0:
                continue
            entry = f"{port.protocol or 'TCP'}/{port.host_ip}/{hp}"
            if entry in seen:
                errs.append(duplicate(f"{path}[{ci}].ports[{pi}].hostPort", entry))
            else:
                seen.add(entry)
    return errs


def validate_containers(
    containers: list[Container], path: str, claim_names: frozenset[str], host_network: bool, is_pod: bool
) -> list[FieldError]:
    """validateContainers: at least one; each valid and uniquely named; host ports free across them all."""
    if not containers:
        return [required(path)]
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, c in enumerate(containers):
        p = index(path, i)
        errs += _validate_common(c, p, claim_names, host_network, is_pod)
        if c.name in names:
            errs.append(duplicate(p + ".name", c.name))
        else:
            names.add(c.name)
    if any(c.ports for c in containers):
        errs += _host_port_conflicts(containers, path, host_network, set())
    return errs


def validate_init_containers(
    init_containers: list[Container],
    containers: list[Container],
    path: str,
    claim_names: frozenset[str],
    host_network: bool,
    is_pod: bool,
) -> list[FieldError]:
    """validateInitContainers: as containers, named apart from them too; host ports free within each one
    (init containers run one at a time). Upstream checks each one as a list of one, so the conflict's
    path always says initContainers[0]."""
    errs: list[FieldError] = []
    names = {c.name for c in containers}
    for i, c in enumerate(init_containers):
        p = index(path, i)
        errs += _validate_common(c, p, claim_names, host_network, is_pod)
        if c.name in names:
            errs.append(duplicate(p + ".name", c.name))
        elif c.name:
            names.add(c.name)
        if c.ports:
            errs += _host_port_conflicts([c], path, host_network, set())
    return errs


def validate_host_network_ports(containers: list[Container], path: str) -> list[FieldError]:
    """validatePodHostNetworkDeps: with hostNetwork a (regular) container's hostPort is its containerPort."""
    errs: list[FieldError] = []
    for i, c in enumerate(containers):
        for pi, port in enumerate(c.ports):
            if port.host_port != 0 and port.host_port != port.container_port:
                errs.append(
                    invalid(
                        f"{path}[{i}].ports[{pi}].hostPort",
                        port.host_port,
                        "must match `containerPort` when `hostNetwork` is true",
                    )
                )
    return errs


def validate_images(containers: list[Container], path: str) -> list[FieldError]:
    """validateContainersOnlyForPod: a pod's images carry no surrounding whitespace."""
    return [
        invalid(index(path, i) + ".image", c.image, "must not have leading or trailing whitespace")
        for i, c in enumerate(containers)
        if c.image != c.image.strip()
    ]
