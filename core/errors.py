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


class RequestTooLarge(BudgetExhausted):
    """An owner refused a request whose estimated cost exceeds its limits (time or memory).

    Raised, like :class:`BudgetExhausted`, before the ledger is charged and
    before any data is touched; an owner's reply step turns it into a
    ``"refused"`` message (``core.service.answer_or_refuse``). The
    message names the request's size, the estimate, the limit and the
    largest request that fits.
    """


class PartyFailure(PpknnError, RuntimeError):
    """A party died, raised, hung, lost its node or timed out while a protocol was running.

    Every runtime turns any failure inside a party into this one error, so
    callers handle one failure path.

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
    cause:
        The traceback of the exception raised inside the party, as text
        (empty when the party died or hung without raising). Text, not the
        exception object, so it survives pickling between processes.

    Examples
    --------
    >>> err = PartyFailure("owner-02", "pp-topk", 2, "RuntimeError: boom", cause="Traceback ...")
    >>> str(err)
    "party 'owner-02' failed in protocol 'pp-topk' round 2: RuntimeError: boom"
    >>> err.cause
    'Traceback ...'
    """

    def __init__(self, party: str, protocol: str, round: int, reason: str,
                 cause: str = "") -> None:
        self.party = party
        self.protocol = protocol
        self.round = round
        self.reason = reason
        self.cause = cause
        super().__init__(
            f"party {party!r} failed in protocol {protocol!r} round {round}: {reason}"
        )

    def where(self, protocol: str, round: int) -> PartyFailure:
        """This failure with the protocol and round filled in when it did not know them."""
        if self.protocol:
            return self
        return PartyFailure(self.party, protocol, round, self.reason, self.cause)

    def __reduce__(self):  # keep pickling (Ray) faithful
        return (PartyFailure, (self.party, self.protocol, self.round, self.reason, self.cause))


class PrivacyLeakWarning(UserWarning):
    """Something leaks privacy outside the protocol's guarantee (e.g. bounds derived from data)."""


# A privacy leak is shown every time, not once per location: appended, so that the
# user's own filters (``-W ignore``, ``warnings.simplefilter("ignore")``, set before or
# after this import) still decide.
warnings.filterwarnings("always", category=PrivacyLeakWarning, append=True)

__all__ = [
    "BudgetExhausted",
    "ConfigError",
    "DataError",
    "IntegrityError",
    "PartyFailure",
    "PpknnError",
    "PrivacyLeakWarning",
    "ProtocolError",
    "RequestTooLarge",
]
