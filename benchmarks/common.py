"""What the benchmarks share with the runtime tests: the dev stack as they rehearse it. The tests
import it from here (tests/support/replication.py); nothing here imports the tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from infra.tools.rehearsal.local import local_topology, on_release

ROOT = Path(__file__).resolve().parents[1]
DEV: dict[str, Any] = yaml.safe_load((ROOT / "stacks" / "dev.yaml").read_text())


def dev_for_runtime(flavour: str, version: str) -> dict[str, Any]:
    """The dev stack on a release, as a rehearsal runs it, with checkpoints and group offsets every
    few seconds instead of every minute, and an offset sync for every record, so that translated
    offsets are exact (MirrorMaker 2's offset.lag.max)."""
    topo = local_topology(on_release(DEV, flavour, version))
    flow = topo["flows"][0]
    flow["syncGroupOffsets"] = {"enabled": True, "intervalSeconds": 5}
    flow["config"]["checkpoint"]["emit.checkpoints.interval.seconds"] = 5
    flow["config"]["source"]["offset.lag.max"] = 0
    return topo
