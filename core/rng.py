"""Seeding policy: one root seed per scenario, an independent stream per use.

Every party, protocol and simulation component draws from its own
:class:`numpy.random.Generator`, derived from the scenario's root seed and a
*path* of names (``("party", 3, "pp-topk")``). Streams are addressed by
``SeedSequence(root, spawn_key=...)`` so adding a party or a protocol never
changes the streams of the others. No global generator is used anywhere.

Two modes:

``reproducible`` (default)
    Streams are derived from the root seed; the same scenario and seed give
    the same run, bit for bit, on every runtime.
``secure``
    Streams are seeded from operating-system entropy and cryptographic masks
    come straight from :func:`os.urandom`; runs do not repeat. Results say
    which mode produced them.

Examples
--------
>>> policy = SeedPolicy(root=7)
>>> a = policy.generator("party", 0).random()
>>> b = policy.generator("party", 0).random()
>>> a == b
True
>>> policy.generator("party", 1).random() == a
False
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from enum import Enum

import numpy as np

from ppknn.core.errors import ConfigError


class RandomnessMode(str, Enum):
    """How randomness is produced (see the module docstring)."""

    REPRODUCIBLE = "reproducible"
    SECURE = "secure"


def _path_key(part: str | int) -> int:
    """Map one element of a stream path to a stable 32-bit integer."""
    if isinstance(part, bool) or not isinstance(part, (int, str)):
        raise ConfigError(f"stream path elements must be str or int, got {part!r}")
    if isinstance(part, int):
        if part < 0:
            raise ConfigError(f"stream path integers must be >= 0, got {part}")
        return part
    digest = hashlib.sha256(part.encode("utf-8")).digest()
    # High bit set so string keys never collide with small integer keys.
    return int.from_bytes(digest[:4], "little") | 0x8000_0000_0000


@dataclass(frozen=True)
class SeedPolicy:
    """Derives independent random streams from one root seed.

    Parameters
    ----------
    root:
        The scenario's root seed (a non-negative integer). Ignored in
        ``secure`` mode.
    mode:
        ``"reproducible"`` or ``"secure"``.
    """

    root: int = 0
    mode: RandomnessMode = RandomnessMode.REPRODUCIBLE

    def __post_init__(self) -> None:
        if isinstance(self.root, bool) or not isinstance(self.root, (int, np.integer)):
            raise ConfigError(f"seed must be a non-negative integer, got {self.root!r}")
        if self.root < 0:
            raise ConfigError(f"seed must be a non-negative integer, got {self.root}")
        try:
            object.__setattr__(self, "mode", RandomnessMode(self.mode))
        except ValueError:
            raise ConfigError(
                f"randomness mode must be 'reproducible' or 'secure', got {self.mode!r}"
            ) from None

    def seed_sequence(self, *path: str | int) -> np.random.SeedSequence:
        """The :class:`~numpy.random.SeedSequence` addressed by ``path``."""
        key = tuple(_path_key(p) for p in path)
        if self.mode is RandomnessMode.SECURE:
            return np.random.SeedSequence(spawn_key=key)  # OS entropy
        return np.random.SeedSequence(int(self.root), spawn_key=key)

    def generator(self, *path: str | int) -> np.random.Generator:
        """A fresh generator for the stream addressed by ``path``."""
        return np.random.Generator(np.random.PCG64(self.seed_sequence(*path)))

    def source(self, *path: str | int) -> RandomSource:
        """A :class:`RandomSource` for the stream addressed by ``path``."""
        return RandomSource(self.generator(*path), self.mode)


class RandomSource:
    """A party's randomness: a numpy generator plus mask-grade integers.

    In ``secure`` mode :meth:`uint64` reads :func:`os.urandom` (masks for
    secure summation must come from a cryptographic source); in
    ``reproducible`` mode it reads the seeded generator.
    """

    def __init__(self, generator: np.random.Generator, mode: RandomnessMode) -> None:
        self.generator = generator
        self.mode = RandomnessMode(mode)

    def uint64(self, shape: tuple[int, ...] | int) -> np.ndarray:
        """Uniform integers over the whole ring Z_(2^64)."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        count = int(np.prod(shape, dtype=np.int64))
        if self.mode is RandomnessMode.SECURE:
            return np.frombuffer(os.urandom(8 * count), dtype=np.uint64).reshape(shape).copy()
        return self.generator.integers(0, 2**64, size=shape, dtype=np.uint64, endpoint=False)

    def uniform(self, low, high, size=None) -> np.ndarray:
        """Uniform floats in ``[low, high)``."""
        return self.generator.uniform(low, high, size)

    def random(self, size=None) -> np.ndarray:
        """Uniform floats in ``[0, 1)``."""
        return self.generator.random(size)


__all__ = ["RandomSource", "RandomnessMode", "SeedPolicy"]
