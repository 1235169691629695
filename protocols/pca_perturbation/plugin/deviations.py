"""The deviating parties of this protocol, offered through its plugin's ``deviations`` hook.

A scenario's ``[[deviation]]`` builds the party from the deviant class
instead of its honest one (:func:`parties.deviations.deviant_spec`).
Kinds, by the honest class they replace:

``Sanitizer``
    ``weak-noise``: adds Laplace noise of ``scale`` (default 0.5) times the
    promised b while its release still states the promised b and amplification.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from ppknn.core.errors import ConfigError
from ppknn.core.messages import Message
from ppknn.parties.deviations import Kind, number
from ppknn.protocols.pca_perturbation.parties.sanitizer import Sanitizer


class WeakNoiseSanitizer(Sanitizer):
    """``weak-noise`` (module docstring)."""

    def __init__(self, *, deviation: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._scale = number(dict(deviation or {}), "scale", 0.5, low=1e-9, high=1.0)

    def release(self, request: Any) -> Message:
        """Noise at ``scale * b``; the release claims ``b`` and its amplification."""
        if getattr(request, "b", None) is None:
            raise ConfigError(f"deviation weak-noise needs a Laplace scheme, got "
                              f"{request.scheme!r}")
        msg = super().release(dataclasses.replace(request, b=request.b * self._scale))
        payload = dict(msg.payload)
        payload["b"] = np.array([request.b])
        if "amplification" in payload:
            payload["amplification"] = np.asarray(payload["amplification"]) ** self._scale
        return dataclasses.replace(msg, payload=payload)


KINDS: dict[str, Kind] = {
    "weak-noise": Kind(Sanitizer, WeakNoiseSanitizer, ("scale",),
                       "the sanitizer adds less noise than it claims"),
}
"""Deviation kind -> :class:`~parties.deviations.Kind`: this protocol's deviating parties."""
