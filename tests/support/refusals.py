"""The one way a test reads a refusal: the problems a call refused with, each as printed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from infra.checks import validation
from infra.core.errors import TopologyError
from infra.topology.resolution import Model


def refusals(call: Callable[..., Any], *args: Any, **kwargs: Any) -> list[str]:
    """`call` must refuse with a TopologyError: its problems, each as the user reads it."""
    with pytest.raises(TopologyError) as exc:
        call(*args, **kwargs)
    return [str(p) for p in exc.value.problems]


def problems(topology: Any) -> list[str]:
    """What validation refuses in a topology document."""
    return refusals(validation.parse, topology)


def accepted(topology: dict) -> Model:
    """Accepted, and every rule decided (no warning)."""
    model = validation.parse(topology)
    assert list(model.warnings) == []
    return model
