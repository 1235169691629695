"""The exception family of ppknn.

Every error the framework raises on purpose derives from :class:`PpknnError`
and also from the built-in exception that fits (``ValueError`` for bad input,
``RuntimeError`` for failures at run time), so callers can catch either.
"""

from __future__ import annotations

import warnings


class PpknnError(Exception):
    """Root of all ppknn errors."""


class ConfigError(PpknnError, ValueError):
    """A scenario, parameter or input value is invalid.

    The message names the offending value and what is allowed.
    """


class DataError(PpknnError, ValueError):
    """A dataset cannot be found, read or partitioned as asked."""


class ProtocolError(PpknnError, RuntimeError):
    """A protocol step received something it cannot process."""


class IntegrityError(PpknnError, RuntimeError):
    """A message failed authentication: tampered, replayed or misdirected."""


class BudgetExhausted(PpknnError, ValueError):
    """A privacy ledger refused a charge: the release would exceed the budget.

    Raised before any data is touched.
    """


class PartyFailure(PpknnError, RuntimeError):
    """A party died, raised, or timed out while a protocol was running.

    Parameters
    ----------
    party:
        The logical party that failed.
    protocol:
        The protocol that was running.
    round:
        The protocol round (``-1`` when not applicable).
    reason:
        What happened, in words.
    """

    def __init__(self, party: str, protocol: str, round: int, reason: str) -> None:
        self.party = party
        self.protocol = protocol
        self.round = round
        self.reason = reason
        super().__init__(
            f"party {party!r} failed in protocol {protocol!r} round {round}: {reason}"
        )

    def __reduce__(self):  # keep pickling (Ray) faithful
        return (PartyFailure, (self.party, self.protocol, self.round, self.reason))


class PrivacyLeakWarning(UserWarning):
    """Something leaks privacy outside the protocol's guarantee (e.g. bounds derived from data)."""


# A privacy leak must never be silenced by the default "show once" filter.
warnings.simplefilter("always", PrivacyLeakWarning)

__all__ = [
    "BudgetExhausted",
    "ConfigError",
    "DataError",
    "IntegrityError",
    "PartyFailure",
    "PpknnError",
    "PrivacyLeakWarning",
    "ProtocolError",
]
