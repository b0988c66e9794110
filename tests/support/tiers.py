"""Each test folder is a tier, and each folder's conftest.py marks its tests with the tier's name,
so `-m` selects a tier as the folders show it (`make test-<tier>` runs one folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

TIERS = ("unit", "conformance", "audit", "apiserver", "runtime", "engine")


def mark(items: list[pytest.Item], conftest: str, tier: str) -> None:
    """Mark the items under the folder of `conftest` (the hook sees every item of the session)."""
    assert tier in TIERS, tier
    folder = Path(conftest).resolve().parent
    for item in items:
        if folder in Path(item.path).resolve().parents:
            item.add_marker(tier)
