"""Names and hashes the controllers give their objects, deterministic for a seed."""

from __future__ import annotations

import random
import uuid
from typing import Any

import msgspec

# utilrand's alphabet: no vowels (no words), no look-alike digits.
ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def safe_encode(text: str) -> str:
    """rand.SafeEncodeString: each byte mapped onto the alphabet (label-safe, never a word)."""
    return "".join(ALPHABET[b % len(ALPHABET)] for b in text.encode())


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def template_hash(template: Any) -> str:
    """A pod template's hash, as the pod-template-hash and controller-revision-hash labels carry it.

    Upstream hashes Go's printout of the template; this hashes its JSON. The value differs from a real
    cluster's; what matters to scheduling is that equal templates share it and different ones do not.
    """
    data = msgspec.json.encode(msgspec.to_builtins(template), order="sorted")
    return safe_encode(str(fnv32a(data)))


def new_uid(rng: random.Random) -> str:
    """A version-4 UUID drawn from the seeded generator."""
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))
