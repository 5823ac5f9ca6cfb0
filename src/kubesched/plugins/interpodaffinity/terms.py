"""Parsed pod (anti-)affinity terms (pkg/scheduler/framework/types.go: AffinityTerm, PodInfo).

A pod's terms are parsed once per PodInfo and kept on it: the selectors of
existing pods are matched against every incoming pod, so compiling them per
cycle would dominate. Parsing mirrors upstream: a term without `namespaces` and
without `namespaceSelector` applies to the pod's own namespace; a nil
`namespaceSelector` selects no namespace, an empty one every namespace.

The scheduler itself does not read `matchLabelKeys` / `mismatchLabelKeys`:
kube-apiserver merges them into `labelSelector` when the pod is created
(MatchLabelKeysInPodAffinity, locked on since 1.33). `apply_match_label_keys`
is that API-server step, for an embedded API server to call on creation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import msgspec
import numpy as np

from kubesched.api.core import Affinity, Pod, PodAffinityTerm, WeightedPodAffinityTerm
from kubesched.api.labels import Selector as LabelSelectorMatcher
from kubesched.api.labels import SelectorError, label_selector
from kubesched.framework.types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from kubesched.framework.snapshot import Snapshot

_NO_LABELS: Mapping[str, str] = {}
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """framework.AffinityTerm: namespaces, label selector, topology key and namespace selector."""

    namespaces: frozenset[str]
    selector: LabelSelectorMatcher
    topology_key: str
    namespace_selector: LabelSelectorMatcher

    def matches(self, pod: Pod, ns_labels: Mapping[str, str] | None) -> bool:
        """AffinityTerm.Matches: `pod` is in a selected namespace and its labels match the selector."""
        meta = pod.metadata
        if meta.namespace in self.namespaces or self.namespace_selector.matches(
            ns_labels if ns_labels is not None else _NO_LABELS
        ):
            return self.selector.matches(meta.labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    """The four term lists of a pod; `error` is upstream's aggregated parse error, if any."""

    required_affinity: tuple[AffinityTerm, ...]
    required_anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[WeightedAffinityTerm, ...]
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...]
    error: str | None = None


def _namespaces_of(pod: Pod, term: PodAffinityTerm) -> frozenset[str]:
    if not term.namespaces and term.namespace_selector is None:
        return frozenset((pod.metadata.namespace,))
    return frozenset(term.namespaces)


def new_affinity_term(pod: Pod, term: PodAffinityTerm) -> AffinityTerm:
    """Compile one v1 term; raises SelectorError for an invalid selector."""
    selector = label_selector(term.label_selector)
    ns_selector = label_selector(term.namespace_selector)
    return AffinityTerm(_namespaces_of(pod, term), selector, term.topology_key, ns_selector)


def get_affinity_terms(pod: Pod, terms: Sequence[PodAffinityTerm]) -> tuple[AffinityTerm, ...]:
    return tuple(new_affinity_term(pod, t) for t in terms)


def _weighted(pod: Pod, terms: Sequence[WeightedPodAffinityTerm]) -> tuple[WeightedAffinityTerm, ...]:
    return tuple(WeightedAffinityTerm(new_affinity_term(pod, t.pod_affinity_term), t.weight) for t in terms)


def required_affinity_terms(affinity: Affinity | None) -> list[PodAffinityTerm]:
    if affinity is not None and affinity.pod_affinity is not None:
        return affinity.pod_affinity.required_during_scheduling_ignored_during_execution
    return []


def required_anti_affinity_terms(affinity: Affinity | None) -> list[PodAffinityTerm]:
    if affinity is not None and affinity.pod_anti_affinity is not None:
        return affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution
    return []


def preferred_affinity_terms(affinity: Affinity | None) -> list[WeightedPodAffinityTerm]:
    if affinity is not None and affinity.pod_affinity is not None:
        return affinity.pod_affinity.preferred_during_scheduling_ignored_during_execution
    return []


def preferred_anti_affinity_terms(affinity: Affinity | None) -> list[WeightedPodAffinityTerm]:
    if affinity is not None and affinity.pod_anti_affinity is not None:
        return affinity.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution
    return []


def parse_pod_affinity(pod: Pod) -> PodAffinityTerms:
    """PodInfo.Update: each list that fails to parse is left empty and its error recorded."""
    aff = pod.spec.affinity
    errors: list[str] = []

    def parse(name: str, build: Callable[[], tuple[T, ...]]) -> tuple[T, ...]:
        try:
            return build()
        except SelectorError as err:
            errors.append(f"{name}: {err}")
            return ()

    required = parse("requiredAffinityTerms", lambda: get_affinity_terms(pod, required_affinity_terms(aff)))
    required_anti = parse(
        "requiredAntiAffinityTerms", lambda: get_affinity_terms(pod, required_anti_affinity_terms(aff))
    )
    preferred = parse("preferredAffinityTerms", lambda: _weighted(pod, preferred_affinity_terms(aff)))
    preferred_anti = parse("preferredAntiAffinityTerms", lambda: _weighted(pod, preferred_anti_affinity_terms(aff)))
    # utilerrors.NewAggregate: one error prints as itself, several as a bracketed list.
    error = None
    if len(errors) == 1:
        error = errors[0]
    elif errors:
        error = "[" + ", ".join(errors) + "]"
    return PodAffinityTerms(required, required_anti, preferred, preferred_anti, error)


_NO_TERMS = PodAffinityTerms((), (), (), ())

# Parsed terms by (namespace, the pod's podAffinity and podAntiAffinity as JSON): replicas share one parse.
_PARSED: dict[tuple[str, bytes], PodAffinityTerms] = {}
_PARSED_SIZE = 4096


def pod_affinity_terms(pi: PodInfo) -> PodAffinityTerms:
    """The parsed terms of a PodInfo, computed on first use and kept on it.

    The terms depend only on the pod's namespace and its pod (anti-)affinity: pods alike (a
    workload's replicas) share one parse.
    """
    terms = pi.affinity_terms()
    if terms is None:
        aff = pi.pod.spec.affinity
        if aff is None or (aff.pod_affinity is None and aff.pod_anti_affinity is None):
            terms = _NO_TERMS
        else:
            key = (pi.namespace, msgspec.json.encode((aff.pod_affinity, aff.pod_anti_affinity)))
            terms = _PARSED.get(key)
            if terms is None:
                terms = parse_pod_affinity(pi.pod)
                if len(_PARSED) >= _PARSED_SIZE:
                    _PARSED.clear()
                _PARSED[key] = terms
        pi.set_affinity_terms(terms)
    return terms


def matching_pod_counts(snapshot: Snapshot, terms: tuple[AffinityTerm, ...]) -> np.ndarray:
    """Per node, its pods matching every one of `terms` (namespace selectors seeing no labels)."""
    # The topology key does not take part in matching: terms differing only there share an index.
    key = ("pod-affinity-match", tuple((t.namespaces, t.selector, t.namespace_selector) for t in terms))
    return snapshot.pod_counts(key, lambda ni: sum(1 for pi in ni.pods if all(t.matches(pi.pod, None) for t in terms)))


def _required_anti_affinity_terms(ni: NodeInfo) -> Iterator[AffinityTerm]:
    for pi in ni.pods_with_required_anti_affinity:
        yield from pod_affinity_terms(pi).required_anti_affinity


def required_anti_affinity_terms_index(snapshot: Snapshot) -> Mapping[AffinityTerm, np.ndarray]:
    """Each distinct required anti-affinity term of existing pods: per node, how many of its pods carry it."""
    return snapshot.key_counts("pod-required-anti-affinity-terms", _required_anti_affinity_terms)


# Kinds of existing pods' terms that score the incoming pod.
REQUIRED_AFFINITY, PREFERRED_AFFINITY, PREFERRED_ANTI_AFFINITY = 0, 1, 2


def _scoring_terms(ni: NodeInfo) -> Iterator[tuple[int, AffinityTerm, int]]:
    for pi in ni.pods_with_affinity:
        terms = pod_affinity_terms(pi)
        for t in terms.required_affinity:
            yield REQUIRED_AFFINITY, t, 0
        for w in terms.preferred_affinity:
            yield PREFERRED_AFFINITY, w.term, w.weight
        for w in terms.preferred_anti_affinity:
            yield PREFERRED_ANTI_AFFINITY, w.term, w.weight


def scoring_terms_index(snapshot: Snapshot) -> Mapping[tuple[int, AffinityTerm, int], np.ndarray]:
    """Each distinct (kind, term, weight) of existing pods' affinity terms: per node, how many pods carry it."""
    return snapshot.key_counts("pod-affinity-scoring-terms", _scoring_terms)


def pod_matches_all_terms(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    """podMatchesAllAffinityTerms: false for no terms; namespace selectors see no labels."""
    if not terms:
        return False
    return all(t.matches(pod, None) for t in terms)
