"""One verdict from `validate` and `render` for every topology document the suite handed the
validation pipeline (tests/support/stacks.py records them)."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

import yaml

from infra.core.errors import TopologyError
from infra.deploy import deployment
from infra.tools import render

STALL = 900  # seconds without any document finishing: a hang


def verdicts(tmp_path: Path, document: dict) -> tuple[list[str] | None, list[str] | None]:
    """(validate's problems, render's problems); None where it accepts."""
    path = tmp_path / "topology.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    found: list[list[str] | None] = []
    for run in (lambda: deployment.validate_file(path),
                lambda: render.run("verdict", {"topology": str(path)}, {}, placeholder_secrets=True)):
        try:
            run()
            found.append(None)
        except TopologyError as exc:
            found.append([str(p) for p in exc.problems])
    return found[0], found[1]


def verdicts_of(tmp_path: Path, documents: list[dict]) -> list[tuple[list[str] | None, list[str] | None]]:
    """`verdicts` of each document, in order, on every core: hundreds of documents, a few of
    hundreds of flows, are minutes on one. The workers are spawned, not forked (a fork of a
    process with threads, as pytest's, can hang); the largest documents go first."""
    workers = min(os.cpu_count() or 1, 4)
    if workers == 1 or len(documents) < 8:
        return [verdicts(tmp_path, d) for d in documents]
    order = sorted(range(len(documents)), key=lambda i: -len(repr(documents[i])))
    folders = [tmp_path / f"worker-{i}" for i in range(len(documents))]
    for folder in folders:
        folder.mkdir()
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = {i: pool.submit(verdicts, folders[i], documents[i]) for i in order}
        # The backstop is for a hang, not for a busy machine: it fails when no document at all
        # finished in STALL seconds (the largest, 500 flows, takes about a minute alone), however
        # long all of them take together on cores shared with the other tiers.
        pending = set(futures.values())
        while pending:
            done, pending = wait(pending, timeout=STALL, return_when=FIRST_COMPLETED)
            if not done:
                raise TimeoutError(f"no verdict in {STALL} s with {len(pending)} documents left: a worker hangs")
        return [futures[i].result() for i in range(len(documents))]
    finally:
        # Not `with`: its exit would wait for a hung worker forever. The workers are ended instead.
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            # Reaped here, so that their CPU time is this test's in the suite's ledger
            # (tests/support/cputime.py counts children when they are reaped).
            process.join(10)
