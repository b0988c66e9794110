"""The kubelet's projection of a changed Secret into the running pods that mount it, as late as
the kubelet makes it.

A pod of the stand-in holds the files of its Secret volumes as they were when it started
(operator.worker). A Secret changed afterwards reaches a running pod's files only at the kubelet's
next sync of that pod: Kubernetes' documentation ("Mounted Secrets are updated automatically",
concepts/configuration/secret) puts the delay at up to the kubelet's sync period (`syncFrequency`,
one minute by default, KubeletConfiguration) plus its cache's propagation delay (its Watch
strategy by default, `configMapAndSecretChangeDetectionStrategy`), and the files are swapped in
whole (the volume's `..data` link, AtomicWriter). Here the sync comes `sync_seconds` after the
change, with the Secret's content as it is then. What a process does with a changed file is its
own: a Kafka client reads its store files when it is created, so a running task keeps the store
it opened, and one created after the sync reads the new file. A container restarted in the same
pod sees the files as last projected: the volume outlives the container. A Secret deleted
meanwhile leaves the files as they were (the kubelet keeps the volume's last content).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from infra.tools.rehearsal import operator

SYNC_SECONDS = 60.0  # the kubelet's syncFrequency default


class Pod(Protocol):
    name: str
    deleted: bool  # rolled away, scaled down or stopped: no longer synced

    @property
    def files(self) -> dict[str, bytes]:
        """Every file the pod holds, by its path inside the pod."""

    def project(self, files: dict[str, bytes]) -> None:
        """These files of its Secret volumes replaced whole, as the kubelet swaps them in."""


Secrets = Mapping[str, Mapping[str, bytes]]


@dataclass
class Kubelet:
    sync_seconds: float | None = SYNC_SECONDS  # None: never synced (each pod keeps its start's files)
    projected: list[tuple[str, str]] = field(default_factory=list)  # (pod, path) of each file swapped in, in order
    _timers: list[threading.Timer] = field(default_factory=list, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def secrets_changed(self, pods: Iterable[tuple[Pod, Mapping[str, Any]]], secrets: Callable[[str], Secrets]) -> None:
        """After Secrets were applied: each running pod (with the KafkaConnect it was started
        from) whose Secret volumes would hold other content now is synced `sync_seconds` later,
        from `secrets(namespace)` as they are then."""
        if self.sync_seconds is None:
            return
        for pod, connect in pods:
            if not pod.deleted and self._changed(pod, connect, secrets):
                timer = threading.Timer(self.sync_seconds, self._sync, (pod, connect, secrets))
                timer.daemon = True
                with self._lock:
                    self._timers.append(timer)
                timer.start()

    @staticmethod
    def _changed(pod: Pod, connect: Mapping[str, Any], secrets: Callable[[str], Secrets]) -> dict[str, bytes]:
        try:
            files = operator.volume_files(connect, secrets(connect["metadata"]["namespace"]))
        except KeyError:
            return {}  # a Secret gone: the volume keeps its last content
        return {path: content for path, content in files.items() if pod.files.get(path) != content}

    def _sync(self, pod: Pod, connect: Mapping[str, Any], secrets: Callable[[str], Secrets]) -> None:
        changed = self._changed(pod, connect, secrets)
        if changed and not pod.deleted:
            pod.project(changed)
            with self._lock:
                self.projected += [(pod.name, path) for path in sorted(changed)]

    @property
    def scheduled(self) -> int:
        """Syncs scheduled so far: one per running pod whose volumes a change would alter."""
        with self._lock:
            return len(self._timers)

    def settle(self, timeout: float = 60) -> None:
        """Until every sync scheduled so far has run (or was cancelled): what a check that
        nothing was projected waits for, instead of a guess at the time a sync takes."""
        with self._lock:
            timers = list(self._timers)
        deadline = time.monotonic() + timeout
        for timer in timers:
            timer.join(max(0.0, deadline - time.monotonic()))
            if timer.is_alive():
                raise TimeoutError(f"a kubelet sync still pending after {timeout:g} s")

    def stop(self) -> None:
        with self._lock:
            for timer in self._timers:
                timer.cancel()
