"""The program runs with rare full collections (infra/core/collector.py): in its own process as
`pulumi up` starts it, and for the run alone when a longer-lived process renders."""

from __future__ import annotations

import gc
import subprocess
import sys

import pulumi
import pytest

from infra.core import collector
from infra.tools import render
from infra.tools.render import RecordingMocks
from tests.support.stacks import ROOT


def test_a_render_runs_the_program_with_rare_full_collections_and_restores_the_thresholds():
    before = gc.get_threshold()
    seen = []

    def body():
        seen.append(gc.get_threshold())
        return pulumi.Output.from_input({"k": "v"})
    assert render.under_mocks(body, RecordingMocks(), "p", "s", {}, []) == {"k": "v"}
    assert seen == [(before[0], before[1], collector.FULL_COLLECTION_THRESHOLD)]
    assert gc.get_threshold() == before


def test_the_thresholds_are_restored_when_the_run_fails():
    before = gc.get_threshold()
    with pytest.raises(KeyError), collector.program_run():
        assert gc.get_threshold() == (before[0], before[1], 10_000)
        raise KeyError("a failed run")
    assert gc.get_threshold() == before


def test_the_pulumi_entry_point_sets_them_for_its_process():
    """`__main__.py` as the language host runs it, with `main` replaced: the setting before it."""
    code = ("import gc, sys, types; m = types.ModuleType('components.program'); "
            "m.main = lambda: print(gc.get_threshold()); sys.modules['components.program'] = m; "
            "import runpy; runpy.run_path('__main__.py')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    young, middle, _ = gc.get_threshold()
    assert done.stdout == f"({young}, {middle}, 10000)\n"
