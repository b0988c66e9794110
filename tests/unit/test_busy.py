"""tools/busy.py, the cores' busy share docs/performance.md quotes: its lines, its averages, and
its refusal of an interval that is not a number of seconds over 0."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time

from tests.support.stacks import ROOT

TOOL = [sys.executable, str(ROOT / "tools" / "busy.py")]


def test_it_prints_a_share_per_interval_and_the_averages_until_the_file_exists(tmp_path):
    done = tmp_path / "done"
    threading.Timer(1.5, done.touch).start()
    started = time.monotonic()
    run = subprocess.run([*TOOL, "--every", "0.4", "--tail", "1", "--until", str(done)], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0 and run.stderr == ""
    *lines, last = run.stdout.splitlines()
    assert len(lines) >= 3 and time.monotonic() - started < 30
    assert all(re.fullmatch(r"\d\d:\d\d:\d\d busy \d{1,3}% of \d+ cores", line) for line in lines), lines
    assert re.fullmatch(rf"average busy \d+\.\d% over {len(lines)} intervals; \d+\.\d% over the last 1 s", last), last


def test_an_interval_of_zero_is_refused():
    run = subprocess.run([*TOOL, "--every", "0"], capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr.endswith("python3 tools/busy.py: error: --every and --tail take a number of seconds over 0\n")
