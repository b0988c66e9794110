"""One verdict from `validate` and `render` for every topology document the suite handed the
validation pipeline (tests/support/stacks.py records them)."""

from __future__ import annotations

from pathlib import Path

import yaml

from infra.core.errors import TopologyError
from infra.deploy import deployment
from infra.tools import render


def verdicts(tmp_path: Path, document: dict) -> tuple[list[str] | None, list[str] | None]:
    """(validate's problems, render's problems); None where it accepts."""
    path = tmp_path / "topology.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    found: list[list[str] | None] = []
    for run in (lambda: deployment.validate_file(path),
                lambda: render.run("verdict", {"topology": str(path)}, {}, placeholder_secrets=True)):
        try:
            run()
            found.append(None)
        except TopologyError as exc:
            found.append([str(p) for p in exc.problems])
    return found[0], found[1]
