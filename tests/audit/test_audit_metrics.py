"""The audit pushes its metrics under the job name the alert rules read."""

from __future__ import annotations

from infra.core import names


def test_the_audit_pushes_under_the_job_the_rule_reads():
    import inspect

    from spark.report import push_metrics
    assert inspect.signature(push_metrics).parameters["job"].default == names.AUDIT
