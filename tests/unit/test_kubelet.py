"""The stand-in's kubelet (infra/tools/rehearsal/kubelet.py): a Secret changed under a running pod
reaches the files of its Secret volumes at the next sync, not before, with the Secret's content as
it is then; a deleted pod is synced no more; a Secret gone leaves the files as they were. What is
not projected is checked once every scheduled sync has run (Kubelet.settle), not after a guess at
how long one takes."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from infra.tools.rehearsal.kubelet import Kubelet

NS = "repl-west-east"
CONNECT = {"metadata": {"name": "repl-west-east", "namespace": NS}, "spec": {"template": {
    "pod": {"volumes": [{"name": "source-west-tls", "secret": {
        "secretName": "west-stores", "items": [{"key": "truststore.jks", "path": "truststore.jks"}]}}]},
    "connectContainer": {"volumeMounts": [{"name": "source-west-tls", "mountPath": "/mnt/source-west-tls"}]}}}}
PATH = "/mnt/source-west-tls/truststore.jks"
SYNC = 0.2


@dataclass
class Pod:
    name: str
    files: dict[str, bytes] = field(default_factory=lambda: {PATH: b"old"})
    deleted: bool = False
    swaps: list[dict[str, bytes]] = field(default_factory=list)

    def project(self, files: dict[str, bytes]) -> None:
        self.swaps.append(files)
        self.files.update(files)


def test_a_changed_secret_reaches_a_running_pod_at_the_next_sync_with_what_it_holds_then():
    kubelet, pod, held = Kubelet(SYNC), Pod("west-0"), {"west-stores": {"truststore.jks": b"new"}}
    try:
        kubelet.secrets_changed([(pod, CONNECT)], lambda namespace: held if namespace == NS else {})
        held["west-stores"] = {"truststore.jks": b"newer"}  # changed again before the sync
        assert pod.files == {PATH: b"old"}
        kubelet.settle()
        assert (pod.swaps, kubelet.projected) == ([{PATH: b"newer"}], [("west-0", PATH)])
        # Nothing changed since: no sync is even scheduled.
        assert kubelet.scheduled == 1
        kubelet.secrets_changed([(pod, CONNECT)], lambda namespace: held)
        kubelet.settle()
        assert (kubelet.scheduled, len(pod.swaps)) == (1, 1)
    finally:
        kubelet.stop()


def test_a_deleted_pod_or_a_secret_gone_is_left_as_it_is():
    kubelet, pods = Kubelet(SYNC), [Pod("west-0"), Pod("west-1")]
    held = {"west-stores": {"truststore.jks": b"new"}}
    try:
        kubelet.secrets_changed([(p, CONNECT) for p in pods], lambda namespace: held)
        pods[0].deleted = True   # rolled away before the sync
        held.clear()             # and the Secret deleted: the other pod keeps its volume's content
        kubelet.settle()         # both syncs ran
        assert kubelet.scheduled == 2
        assert [p.files for p in pods] == [{PATH: b"old"}, {PATH: b"old"}] and kubelet.projected == []
    finally:
        kubelet.stop()


def test_without_a_sync_period_the_pods_keep_their_start_s_files_and_stop_cancels_a_sync():
    pod, held = Pod("west-0"), {"west-stores": {"truststore.jks": b"new"}}
    never = Kubelet(None)
    never.secrets_changed([(pod, CONNECT)], lambda namespace: held)
    stopped = Kubelet(SYNC)
    stopped.secrets_changed([(pod, CONNECT)], lambda namespace: held)
    stopped.stop()
    never.settle()
    stopped.settle()  # the cancelled sync's thread ended without running it
    assert pod.files == {PATH: b"old"} and never.projected == stopped.projected == []


def test_settle_refuses_to_wait_past_its_timeout_for_a_sync_still_pending():
    kubelet, pod = Kubelet(30), Pod("west-0")
    try:
        kubelet.secrets_changed([(pod, CONNECT)], lambda namespace: {"west-stores": {"truststore.jks": b"new"}})
        with pytest.raises(TimeoutError, match=r"^a kubelet sync still pending after 0.1 s$"):
            kubelet.settle(timeout=0.1)
        assert pod.files == {PATH: b"old"}
    finally:
        kubelet.stop()
