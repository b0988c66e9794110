"""How Strimzi's CRDs are generated (infra/tools/rehearsal/crds.py): the generator's arguments as
Strimzi's api/pom.xml passes them, one line per Strimzi release a supported release is or ships,
and the one line 0.48.x's generator wrote that 1.2.0's does not. The generation itself runs in
the conformance tier (it takes Java)."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.core.releases import SUPPORTED
from infra.tools.rehearsal import crds


def test_every_supported_release_has_its_strimzi_line():
    assert sorted({r.strimzi for r in SUPPORTED}) == sorted(crds.LINES) == ["0.43.0", "0.45.0", "0.48.0", "0.51.0",
                                                                                "1.2.0"]


def test_the_generator_arguments_are_strimzi_s():
    assert crds.arguments(crds.LINES["0.43.0"], Path("/out")) == [
        "--label", "app:strimzi", "--label", "strimzi.io/crd-install:true", "--target-kube", "1.16+",
        "--crd-api-version", "v1", "--api-versions", "v1beta2", "--storage-version", "v1beta2", "--yaml",
        "io.strimzi.api.kafka.model.connect.KafkaConnect=/out/041-Crd-kafkaconnect.yaml",
        "io.strimzi.api.kafka.model.connector.KafkaConnector=/out/047-Crd-kafkaconnector.yaml",
        "io.strimzi.api.kafka.model.podset.StrimziPodSet=/out/042-Crd-strimzipodset.yaml"]
    assert crds.arguments(crds.LINES["1.2.0"], Path("/out"))[9:12] == ["v1", "--storage-version", "v1"]
    # The bridge release serves both and stores v1beta2 (0.51.0 api/pom.xml); the generated files
    # were compared with the released ones at the tag: byte-equal.
    assert crds.arguments(crds.LINES["0.51.0"], Path("/out"))[9:12] == ["v1beta2,v1", "--storage-version", "v1beta2"]


def test_deprecated_false_follows_each_storage_line_only():
    text = "spec:\n  versions:\n  - name: v1beta2\n    served: true\n    storage: true\n    schema: {}\n" \
           "        storage: nested\n"
    assert crds._with_deprecated_false(text) == (
        "spec:\n  versions:\n  - name: v1beta2\n    served: true\n    storage: true\n    deprecated: false\n"
        "    schema: {}\n        storage: nested\n")
    assert [line for line, spec in crds.LINES.items() if spec.deprecated_false] == ["0.48.0"]


def test_an_unknown_line_is_refused_with_the_known_ones():
    with pytest.raises(crds.CrdsError, match="no CRDs for Strimzi 0.47.0: known lines are 0.43.0, 0.45.0, 0.48.0, 0.51.0, 1.2.0"):
        crds.folder("0.47.0")


def test_a_cache_folder_is_filled_once_per_digest_and_a_failed_fill_keeps_the_last(tmp_path):
    """jars.filled_once, which the jars and the CRDs share."""
    from infra.tools.rehearsal import jars
    fills: list[str] = []

    def fill(text: str):
        def write(partial: Path) -> None:
            fills.append(text)
            (partial / "f.txt").write_text(text)
        return write
    target = tmp_path / "cache" / "x"
    assert jars.filled_once(target, "d1", fill("one")) == target
    assert jars.filled_once(target, "d1", fill("again")) == target
    assert (fills, (target / "f.txt").read_text()) == (["one"], "one")

    def broken(partial: Path) -> None:
        raise crds.CrdsError("the generator failed")
    with pytest.raises(crds.CrdsError, match="the generator failed"):
        jars.filled_once(target, "d2", broken)
    assert (target / "f.txt").read_text() == "one" and (target / ".stamp").read_text() == "d1"
    jars.filled_once(target, "d2", fill("two"))
    assert (fills, (target / "f.txt").read_text(), (target / ".stamp").read_text()) == (["one", "two"], "two", "d2")
