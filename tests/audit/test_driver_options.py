"""The options the tests give the audit's Spark driver (tests/support/replication.py
spark_submit_args): the quick JVM profile and a class-data archive of the driver's own, named by
what decides what it loads, and nothing else changed in how Spark is launched."""

from __future__ import annotations

import shlex

from infra.tools.rehearsal import jars
from tests.support.replication import SPARK_QUICK, spark_submit_args


def test_the_driver_dumps_its_archive_first_and_maps_it_once_settled(cds_cache):
    submit, archive = spark_submit_args()
    assert archive is not None and archive.staged is not None and not archive.final.exists()
    assert archive.final.parent == cds_cache and archive.final.name.startswith("spark-driver-")
    assert shlex.split(submit) == [
        "--driver-java-options", " ".join([*SPARK_QUICK, f"-XX:ArchiveClassesAtExit={archive.staged}",
                                           "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]),
        "--jars", ",".join(str(j) for j in jars.audit_jars()), "pyspark-shell"]
    archive.staged.write_bytes(b"a dump")
    archive.settle(0)  # the job ended by itself (0 or 1): its dump becomes the archive
    again, mapped = spark_submit_args()
    assert mapped is not None and mapped.staged is None and mapped.final == archive.final
    assert shlex.split(again)[1] == " ".join([*SPARK_QUICK, f"-XX:SharedArchiveFile={archive.final}",
                                              "-Xlog:cds=off", "-Xlog:cds+dynamic=off"])


def test_a_driver_that_did_not_end_by_itself_leaves_no_archive(cds_cache):
    _, archive = spark_submit_args()
    assert archive is not None and archive.staged is not None
    archive.staged.write_bytes(b"half a dump")
    archive.settle(-9)
    assert not archive.final.exists() and not archive.staged.exists()


def test_without_class_data_sharing_only_the_profile_is_given(cds_cache, monkeypatch):
    monkeypatch.setenv("KAFKA_REPLICATION_CDS", "0")
    submit, archive = spark_submit_args()
    assert archive is None
    assert shlex.split(submit)[:2] == ["--driver-java-options", " ".join(SPARK_QUICK)]
    assert not cds_cache.exists()
