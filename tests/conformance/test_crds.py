"""Strimzi's CRDs generated from its published artifacts (infra/tools/rehearsal/crds.py) are the
released ones: byte for byte where a copy of the released files is at hand (the project's
workspace keeps 0.48.0 and 1.2.0 beside the repository; `STRIMZI_RELEASED_CRDS` names another
folder of the same layout). This is the one test that reads such a copy; every tier validates
against the generated CRDs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from infra.core.releases import SUPPORTED
from infra.tools.rehearsal import crds
from tests.support.schemas import strimzi_crds
from tests.support.stacks import ROOT

RELEASED = Path(os.environ.get("STRIMZI_RELEASED_CRDS", ROOT.parent / "shared" / "strimzi-crds"))
LINES = sorted({r.strimzi: r for r in SUPPORTED}.items())


@pytest.mark.parametrize("line,release", LINES, ids=[line for line, _ in LINES])
def test_each_line_serves_and_stores_the_release_api_version(line, release):
    folder = strimzi_crds(release)
    assert sorted(p.name for p in folder.glob("*.yaml")) == ["041-Crd-kafkaconnect.yaml", "047-Crd-kafkaconnector.yaml"]
    for path in sorted(folder.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        assert crd["metadata"]["labels"] == {"app": "strimzi", "strimzi.io/crd-install": "true"}
        assert [(v["name"], v["served"], v["storage"]) for v in crd["spec"]["versions"]] == [
            (release.api_version.split("/")[1], True, True)]


@pytest.mark.parametrize("line", ["0.48.0", "1.2.0"])
def test_generated_crds_equal_the_released_files(line):
    if not (RELEASED / line).is_dir():
        pytest.skip(f"no copy of Strimzi {line}'s released CRDs at {RELEASED / line} (STRIMZI_RELEASED_CRDS)")
    release = next(r for r in SUPPORTED if r.strimzi == line)
    generated = strimzi_crds(release)
    for _, name in crds.FILES.values():
        assert (generated / name).read_bytes() == (RELEASED / line / name).read_bytes(), name


def test_the_lines_differ_where_strimzi_changed_them():
    """What validating CSM against its own line changes: 0.43.0's KafkaConnect has no
    `x-kubernetes-validations` for the JMX exporter's ConfigMap (0.48.0 added it)."""
    def rules(line: str) -> str:
        release = next(r for r in SUPPORTED if r.strimzi == line)
        return (strimzi_crds(release) / "041-Crd-kafkaconnect.yaml").read_text()
    rule = "self.type != 'jmxPrometheusExporter' || has(self.valueFrom)"
    assert rule not in rules("0.43.0") and rule in rules("0.48.0") and rule in rules("1.2.0")
