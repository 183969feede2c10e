"""Stand-ins for what providers generate, for the offline mocks of every cloud: a hash of what
the value is for, so the same plan gives the same ids in every run."""

from __future__ import annotations

import hashlib


def short_hash(*parts: str) -> str:
    """Twelve hex characters of the SHA-256 of `parts` joined by "/"."""
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:12]
