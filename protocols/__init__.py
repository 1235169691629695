"""Protocols: party-side steps and one driver per protocol."""
