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
    Every generator is cryptographically secure: a numpy
    :class:`~numpy.random.Generator` over :class:`ChaChaBitGenerator` (the
    ChaCha20 keystream of ``cryptography``, keyed from :func:`os.urandom`),
    so every random choice a party makes -- fills, ring order, start node,
    shares, DP noise -- comes from a CSPRNG; masks come straight from
    :func:`os.urandom`. Runs do not repeat. Results say which mode, and
    which generator, produced them (:func:`describe`).

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

import ctypes
import hashlib
import os
import threading
from dataclasses import dataclass
from enum import Enum
from typing import Any

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
        """A fresh generator for the stream addressed by ``path``.

        In ``secure`` mode a generator over :class:`ChaChaBitGenerator` (a
        CSPRNG keyed from OS entropy); the path only labels the use.
        """
        if self.mode is RandomnessMode.SECURE:
            for p in path:
                _path_key(p)  # same checks as in reproducible mode
            return np.random.Generator(ChaChaBitGenerator())  # type: ignore[arg-type]
        return np.random.Generator(np.random.PCG64(self.seed_sequence(*path)))

    def source(self, *path: str | int) -> RandomSource:
        """A :class:`RandomSource` for the stream addressed by ``path``."""
        return RandomSource(self.generator(*path), self.mode)


class _BitGen(ctypes.Structure):
    """numpy's ``bitgen_t`` (numpy/random/bitgen.h): a state and four draw functions."""

    _fields_ = [("state", ctypes.c_void_p),
                ("next_uint64", ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p)),
                ("next_uint32", ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p)),
                ("next_double", ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p)),
                ("next_raw", ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p))]


_U64 = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p)
_U32 = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p)
_DBL = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p)
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class ChaChaBitGenerator:
    """A cryptographically secure bit generator for :class:`numpy.random.Generator`.

    The words are the ChaCha20 keystream (``cryptography``'s implementation)
    under a 256-bit key and 128-bit nonce read from :func:`os.urandom` when
    the generator is made; nothing about it repeats between generators or
    runs. Every numpy distribution then draws from a CSPRNG. It cannot be
    seeded (there is no reproducible use for it) nor pickled; it is about
    ten times slower than PCG64 (a Python call per 64-bit word), which only
    ``secure`` mode pays.

    Examples
    --------
    >>> g = np.random.Generator(ChaChaBitGenerator())
    >>> 0.0 <= g.random() < 1.0
    True
    """

    _WORDS = 2048  # keystream words fetched at once

    def __init__(self) -> None:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

        self._stream = Cipher(algorithms.ChaCha20(os.urandom(32), os.urandom(16)),
                              mode=None).encryptor()
        self._words: list[int] = []
        self._next = 0
        self.lock = threading.Lock()
        self.words_drawn = 0

        def next_uint64(_state: Any) -> int:
            if self._next >= len(self._words):
                self._words = np.frombuffer(self._stream.update(bytes(8 * self._WORDS)),
                                            dtype=np.uint64).tolist()
                self._next = 0
            word = self._words[self._next]
            self._next += 1
            self.words_drawn += 1
            return word

        self._callbacks = (_U64(next_uint64), _U32(lambda s: next_uint64(s) >> 32),
                           _DBL(lambda s: (next_uint64(s) >> 11) * (1.0 / 9007199254740992.0)),
                           _U64(next_uint64))
        self._bitgen = _BitGen(None, *self._callbacks)
        self.capsule = _capsule_new(ctypes.addressof(self._bitgen), b"BitGenerator", None)

    def __reduce__(self) -> Any:
        raise TypeError("a ChaChaBitGenerator (secure mode) cannot be pickled: its key stays "
                        "in the process that made it")


def describe(mode: RandomnessMode | str) -> dict[str, str]:
    """What produces the randomness of a run in ``mode`` (for the results).

    >>> describe("secure")["generator"]
    'ChaCha20 keystream keyed from os.urandom (CSPRNG)'
    """
    if RandomnessMode(mode) is RandomnessMode.SECURE:
        return {"mode": "secure",
                "generator": "ChaCha20 keystream keyed from os.urandom (CSPRNG)",
                "masks": "os.urandom",
                "cryptographic": "yes: every random choice of every party"}
    return {"mode": "reproducible",
            "generator": "numpy PCG64, one SeedSequence stream per party and use, from the "
                         "root seed",
            "masks": "the same seeded streams (not secure: for experiments)",
            "cryptographic": "no"}


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


__all__ = ["ChaChaBitGenerator", "RandomSource", "RandomnessMode", "SeedPolicy", "describe"]
