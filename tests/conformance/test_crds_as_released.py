"""Strimzi's CRDs generated from its published artifacts (infra/tools/rehearsal/crds.py) are the
released ones, byte for byte: each file's SHA-256 against the digest of the file Strimzi released
(`packaging/install/cluster-operator/` at the release's tag, which its `install/` folder and
release bundles hold unchanged), recorded here. Every tier validates against the generated CRDs."""

from __future__ import annotations

import hashlib

import pytest
import yaml

from infra.core.releases import SUPPORTED
from infra.tools.rehearsal import crds
from tests.support.schemas import strimzi_crds

LINES = sorted({r.strimzi: r for r in SUPPORTED}.items())

# SHA-256 of the released files, by Strimzi line.
RELEASED = {
    "0.43.0": {"041-Crd-kafkaconnect.yaml": "4c1d3c1e7fa2aefd00771e935ee4eba15659d5d50cbc359b0dcd9250697fedb5",
               "042-Crd-strimzipodset.yaml": "933bbbd26ac3078c214bda89b53583136e0a7a0e84930abb1736107168d6031f",
               "047-Crd-kafkaconnector.yaml": "2a80f94b9192f5d27ca9d293e3b5a71ef7d5554cc5400d20545a871dc7bf76c5"},
    "0.45.0": {"041-Crd-kafkaconnect.yaml": "45caa9180ed7e76b060e91b11c66c24ebbf9aedd1723fba1b19b37e4725d00a5",
               "042-Crd-strimzipodset.yaml": "933bbbd26ac3078c214bda89b53583136e0a7a0e84930abb1736107168d6031f",
               "047-Crd-kafkaconnector.yaml": "6728c12aa1545a3b224c6f4fd7a288933575f7e5b2df52be297bcebc33238022"},
    "0.48.0": {"041-Crd-kafkaconnect.yaml": "1a0be92c2e4d1e5557bd09737651f32569fc00278a3d5e6c0ce51ac930131329",
               "042-Crd-strimzipodset.yaml": "31d4f6fbdd1ed73b5cbabef6c0f05476952461060873fc75db593cae322628fd",
               "047-Crd-kafkaconnector.yaml": "fd916022426ffe6b26efdbdb5dc765bc4f560e630c04d3a52a5506dad27b60f7"},
    "0.51.0": {"041-Crd-kafkaconnect.yaml": "6a0f64d67f4ee60a2cff51cd29ac54f02413d3c972dd560d8b760d90b18a7282",
               "042-Crd-strimzipodset.yaml": "9a9a3f94c2dd888b3457322c569951809d7dfc872fd831fad2793fd47ff7ee89",
               "047-Crd-kafkaconnector.yaml": "721fb1301440a86afd47026ff3af751fbeed94d9dc4a0c1403aefcdaac36fe9a"},
    "1.2.0": {"041-Crd-kafkaconnect.yaml": "00339af1b873aefbfc4406ef251d03d0928a8d7f6a85c45bd322080e21d6f3be",
              "042-Crd-strimzipodset.yaml": "e669bc6b5bbebd4dd911e5ad0b9817cbbee9b920f1a8a1ab0fc8dda116bb2fc8",
              "047-Crd-kafkaconnector.yaml": "8050325edfec7ac90718f9e40f3f808b5489d7ae6c11b1634bc82426955b8fff"},
}


@pytest.mark.parametrize("line,release", LINES, ids=[line for line, _ in LINES])
def test_each_line_serves_and_stores_the_release_api_version(line, release):
    folder = strimzi_crds(release)
    assert sorted(p.name for p in folder.glob("*.yaml")) == ["041-Crd-kafkaconnect.yaml", "042-Crd-strimzipodset.yaml",
                                                           "047-Crd-kafkaconnector.yaml"]
    for path in sorted(folder.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        assert crd["metadata"]["labels"] == {"app": "strimzi", "strimzi.io/crd-install": "true"}
        # Each version the release serves, the oldest stored (the bridge: v1 listed first, v1beta2 stored).
        assert sorted((v["name"], v["served"], v["storage"]) for v in crd["spec"]["versions"]) == sorted(
            (v.split("/")[1], True, v == release.storage_version) for v in release.api_versions)


@pytest.mark.parametrize("line,release", LINES, ids=[line for line, _ in LINES])
def test_generated_crds_equal_the_released_files(line, release):
    generated = strimzi_crds(release)
    assert sorted(RELEASED) == sorted(crds.LINES)
    assert {name: hashlib.sha256((generated / name).read_bytes()).hexdigest()
            for _, name in crds.FILES.values()} == RELEASED[line]


def test_the_lines_differ_where_strimzi_changed_them():
    """What validating CSM against its own line changes: 0.43.0's KafkaConnect has no
    `x-kubernetes-validations` for the JMX exporter's ConfigMap (0.48.0 added it)."""
    def rules(line: str) -> str:
        release = next(r for r in SUPPORTED if r.strimzi == line)
        return (strimzi_crds(release) / "041-Crd-kafkaconnect.yaml").read_text()
    rule = "self.type != 'jmxPrometheusExporter' || has(self.valueFrom)"
    assert rule not in rules("0.43.0") and rule in rules("0.48.0") and rule in rules("1.2.0")
