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
    # The file appears once three intervals have been printed, not after a fixed time: on a loaded
    # machine the tool's own start may take longer than a timer would allow.
    done = tmp_path / "done"
    started = time.monotonic()
    with subprocess.Popen([*TOOL, "--every", "0.4", "--tail", "1", "--until", str(done)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as tool:
        assert tool.stdout is not None and tool.stderr is not None
        backstop = threading.Timer(60, tool.kill)  # the tool must end once the file exists
        backstop.daemon = True
        backstop.start()
        printed = [tool.stdout.readline() for _ in range(3)]
        done.touch()
        rest, stderr = tool.communicate(timeout=60)
        backstop.cancel()
    assert tool.returncode == 0 and stderr == ""
    *lines, last = ("".join(printed) + rest).splitlines()
    assert len(lines) >= 3 and time.monotonic() - started < 60
    assert all(re.fullmatch(r"\d\d:\d\d:\d\d busy \d{1,3}% of \d+ cores", line) for line in lines), lines
    assert re.fullmatch(rf"average busy \d+\.\d% over {len(lines)} intervals; \d+\.\d% over the last 1 s", last), last


def test_an_interval_of_zero_is_refused():
    run = subprocess.run([*TOOL, "--every", "0"], capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr.endswith("python3 tools/busy.py: error: --every and --tail take a number of seconds over 0\n")
