"""The runtime tier's release matrix, designed rather than multiplied (tests/support/stacks.py,
docs/architecture.md#the-runtime-release-matrix): each subset still covers every way the
releases differ in what its tests prove, whatever rows infra/core/releases.py holds."""

from __future__ import annotations

from infra.core import releases
from tests.support import stacks

RUNTIME = [r for r in releases.SUPPORTED if not r.bridge]


def rows(pairs: list[tuple[str, str]]) -> list[releases.Release]:
    found = [releases.find(releases.Flavour(f), v) for f, v in pairs]
    assert None not in found
    return found  # type: ignore[return-value]


def test_every_release_runs_the_dev_flow_and_every_stayed_on_release_the_prod_stack():
    assert stacks.RELEASES == [(r.flavour.value, r.version) for r in releases.SUPPORTED]
    assert stacks.RUNTIME_RELEASES == [(r.flavour.value, r.version) for r in RUNTIME]


def test_the_ends_span_every_difference_no_row_gates_apart():
    ends = rows(stacks.RELEASE_ENDS)
    for difference in (lambda r: r.worker_file, lambda r: r.kafka_line[0], lambda r: r.v1_semantics,
                       lambda r: r.offset_management, lambda r: r.failed_connector_stops):
        assert {difference(r) for r in ends} == {difference(r) for r in RUNTIME}
    assert stacks.RELEASE_ENDS == [("csm", "1.2"), ("strimzi", "1.2.0")]  # today's rows


def test_every_way_of_reaching_the_clusters_is_run():
    # Each difference on its own, over every release the bridge included: its one `ca.crt` key is
    # 1.2.0's, its password through a file 0.48.0's.
    chosen = rows(stacks.RELEASES_BY_WORKER_CONNECTION)
    for difference in (lambda r: r.worker_file, lambda r: r.certificates_in_one_key,
                       lambda r: r.password_through_provider, lambda r: r.connect_role_always):
        assert {difference(r) for r in chosen} == {difference(r) for r in releases.SUPPORTED}
    assert stacks.RELEASES_BY_WORKER_CONNECTION == [("csm", "1.2"), ("strimzi", "0.48.0"), ("strimzi", "1.2.0")]


def test_every_path_of_a_connector_s_offsets_is_run():
    def key(r: releases.Release) -> tuple:
        return (r.offset_management, r.worker_file)
    assert {key(r) for r in rows(stacks.RELEASES_BY_OFFSETS_PATH)} == {key(r) for r in RUNTIME}
    assert all(r.offset_management for r in rows(stacks.OFFSETS_RELEASES))
    assert {r.worker_file for r in rows(stacks.OFFSETS_RELEASES)} == {r.worker_file for r in RUNTIME
                                                                      if r.offset_management}


def test_one_per_keeps_the_oldest_or_the_newest_of_each_value():
    assert stacks.one_per(lambda r: r.flavour) == [("csm", "1.2"), ("strimzi", "0.48.0")]
    assert stacks.one_per(lambda r: r.flavour, newest=True) == [("csm", "1.4"), ("strimzi", "1.2.0")]
