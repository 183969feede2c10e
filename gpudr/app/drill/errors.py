"""The errors of a drill's cloud calls: one line each, naming what was asked and the cloud's
reason, so that the drill reports them in the stage they happened in, never as a traceback."""

from __future__ import annotations


class ProbeError(RuntimeError):
    """A cloud call failed; the message is one line: what was asked, and the cloud's reason."""


class AccessDenied(ProbeError):
    """The identity the probe runs as may not do this (HTTP 403 and its SDK forms)."""


class NotFound(ProbeError):
    """The bucket, object or pool does not exist (HTTP 404 and its SDK forms)."""
