"""JSON as the standard defines it, for what the commands print and write: Python's `json` writes
`NaN` and `Infinity` for non-finite floats, which no strict parser (jq, JavaScript's JSON.parse,
Go's encoding/json) reads. A YAML `.nan`, `.inf` or `-.inf` in a topology is shown as that text."""

from __future__ import annotations

import json
import math
from typing import Any

_YAML = {math.inf: ".inf", -math.inf: "-.inf"}


def finite(value: Any) -> Any:
    """`value` with every non-finite float replaced by its YAML spelling."""
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else _YAML[value]
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """json.dumps of `value` that never writes NaN or Infinity."""
    return json.dumps(finite(value), allow_nan=False, **options)
