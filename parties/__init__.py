"""Parties: who holds what (ring data owners, DP owner, analysts, ...)."""
