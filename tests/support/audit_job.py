"""One finished run of the audit's CronJob on a real API server, as the Job controller and the
kubelet leave it, where neither runs: a Job of the CronJob (its template, its owner reference)
with the status the Job controller writes when the pod exited, and its pod with the container's
termination message (the run's summary, contract/lastrun.py) as the kubelet keeps it.

The summary is whatever the caller gives: the audit's own termination log, written by a real run
(tests/engine/test_engine_readiness.py), or a made-up one (tests/apiserver/test_status_command.py)."""

from __future__ import annotations

from typing import Any

from infra.tools.rehearsal.kubeapi import Client

JSON = dict[str, Any]


def finished_run(server: Client, namespace: str, cron_name: str, suffix: str, summary: str, exit_code: int,
                 started: str = "2026-11-27T10:17:01Z", finished: str = "2026-11-27T10:17:40Z") -> tuple[JSON, JSON]:
    """The Job `<cron>-<suffix>` and its pod, ended with `exit_code`; returns both as stored."""
    status, cron = server.request("GET", f"/apis/batch/v1/namespaces/{namespace}/cronjobs/{cron_name}")
    assert status == 200, cron
    job_name = f"{cron_name}-{suffix}"
    job = server.create({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": job_name, "namespace": namespace, "labels": cron["spec"]["jobTemplate"]["metadata"]["labels"],
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": cron_name,
                                          "uid": cron["metadata"]["uid"], "controller": True}]},
        "spec": {"template": cron["spec"]["jobTemplate"]["spec"]["template"], "suspend": True}})
    # What the Job controller writes when the pod ended: the fields the server requires of a
    # terminal condition (start and completion times; SuccessCriteriaMet before Complete, or
    # FailureTarget before Failed).
    def condition(kind: str) -> JSON:
        return {"type": kind, "status": "True", "lastTransitionTime": finished, "lastProbeTime": finished}
    if exit_code == 0:
        job["status"] = {"startTime": started, "completionTime": finished, "succeeded": 1, "ready": 0,
                         "terminating": 0, "conditions": [condition("SuccessCriteriaMet"), condition("Complete")]}
    else:
        # Failed once the pod failed backoffLimit + 1 times; of those pods only the last is made
        # here (each retry is a run of its own, which status does not read: it reads the newest).
        retries = cron["spec"]["jobTemplate"]["spec"].get("backoffLimit", 6)
        job["status"] = {"startTime": started, "failed": retries + 1, "ready": 0, "terminating": 0,
                         "conditions": [{**condition("FailureTarget"), "reason": "BackoffLimitExceeded"},
                                        {**condition("Failed"), "reason": "BackoffLimitExceeded"}]}
    status, stored_job = server.request("PUT", f"/apis/batch/v1/namespaces/{namespace}/jobs/{job_name}/status", job)
    assert status == 200, stored_job
    template = cron["spec"]["jobTemplate"]["spec"]["template"]
    pod_name = f"{job_name}-x7k2p"
    pod = server.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": pod_name, "namespace": namespace,
        "labels": {**template["metadata"]["labels"], "batch.kubernetes.io/job-name": job_name, "job-name": job_name}},
        "spec": template["spec"]})
    pod["status"] = {"phase": "Succeeded" if exit_code == 0 else "Failed", "containerStatuses": [{
        "name": template["spec"]["containers"][0]["name"], "image": template["spec"]["containers"][0]["image"],
        "imageID": "", "ready": False, "restartCount": 0,
        "state": {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                                 "message": summary, "startedAt": started, "finishedAt": finished}}}]}
    status, stored_pod = server.request("PUT", f"/api/v1/namespaces/{namespace}/pods/{pod_name}/status", pod)
    assert status == 200, stored_pod
    return stored_job, stored_pod
