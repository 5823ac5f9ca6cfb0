"""The node tree (backend/cache/node_tree.go): the order in which nodes are tried.

Nodes are grouped by zone key (region + zone) in order of arrival; the list
takes one node from each zone in turn, so that the first nodes examined by a
scheduling cycle are spread across zones.
"""

from __future__ import annotations

from collections.abc import Mapping

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
BETA_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"


def zone_key(labels: Mapping[str, str]) -> str:
    """utilnode.GetZoneKey: "region:\\x00:zone", or "" when the node has neither."""
    zone = labels.get(ZONE_LABEL)
    if zone is None:
        zone = labels.get(BETA_ZONE_LABEL, "")
    region = labels.get(REGION_LABEL)
    if region is None:
        region = labels.get(BETA_REGION_LABEL, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


class NodeTree:
    """Zones in order of first appearance, each with its node names in order of arrival.

    A zone's names are the keys of a dict (ordered as a list, with O(1) lookup and
    removal): a cluster's nodes all arrive in one zone when it has no zone labels.
    """

    def __init__(self) -> None:
        self.tree: dict[str, dict[str, None]] = {}
        self.zones: list[str] = []
        self.num_nodes = 0

    def add(self, name: str, labels: Mapping[str, str]) -> None:
        zone = zone_key(labels)
        names = self.tree.get(zone)
        if names is None:
            self.zones.append(zone)
            self.tree[zone] = {name: None}
        elif name in names:
            return
        else:
            names[name] = None
        self.num_nodes += 1

    def remove(self, name: str, labels: Mapping[str, str]) -> bool:
        zone = zone_key(labels)
        names = self.tree.get(zone)
        if names is None or name not in names:
            return False
        del names[name]
        if not names:
            del self.tree[zone]
            self.zones.remove(zone)
        self.num_nodes -= 1
        return True

    def update(self, name: str, old_labels: Mapping[str, str] | None, new_labels: Mapping[str, str]) -> bool:
        """Move a node whose zone changed; True when the order changed."""
        if old_labels is not None and zone_key(old_labels) == zone_key(new_labels):
            return False
        if old_labels is not None:
            self.remove(name, old_labels)
        self.add(name, new_labels)
        return True

    def list(self) -> list[str]:
        """Round robin over zones: the first node of each zone, then the second, ..."""
        lists = [list(self.tree[z]) for z in self.zones]
        if len(lists) == 1:
            return lists[0]
        out: list[str] = []
        depth = max((len(x) for x in lists), default=0)
        for i in range(depth):
            for names in lists:
                if i < len(names):
                    out.append(names[i])
        return out
