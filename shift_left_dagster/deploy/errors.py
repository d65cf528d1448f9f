"""Errors of the deploy layer that the CLI reports in one line, importable without the layer itself."""

from __future__ import annotations


class LeaseBusy(RuntimeError):
    """Another deployment of the project held the lease for longer than we may wait."""
