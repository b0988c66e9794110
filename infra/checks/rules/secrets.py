"""Which configuration keys name a secret: their values must come from a Secret, never be written."""

from __future__ import annotations

import re

# Connector and client keys that hold secrets: refused in a topology's `config` (the values come
# from Pulumi secret config), and allowed only as config provider references in the objects the
# policy pack checks (infra/checks/policies.py).
SECRET_LIKE = re.compile(r"(password|jaas|secret|\.key$|credentials)", re.IGNORECASE)


def secret_named(key: str) -> bool:
    """Whether a connector, client or ConfigMap key names a secret."""
    return SECRET_LIKE.search(key) is not None
