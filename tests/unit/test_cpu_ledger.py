"""The suite's CPU ledger (tests/support/cputime.py) and its summary (tools/durations.py --cpu)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tools import durations

ROOT = Path(__file__).resolve().parents[2]

# A test whose child burns about 0.6 s of CPU, and one that burns its own: the ledger charges each
# to its test, the child's as children's CPU.
BUSY = '''
import subprocess, sys, time

def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

def test_child():
    subprocess.run([sys.executable, __file__], check=True)

if __name__ == "__main__":
    spin(0.6)

def test_own():
    spin(0.4)
'''


def project(folder: Path) -> None:
    """A project of one test module, whose conftest registers the ledger as tests/conftest.py does."""
    tests = folder / "tests" / "unit"
    tests.mkdir(parents=True)
    (tests / "test_busy.py").write_text(BUSY)
    (folder / "conftest.py").write_text(f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
                                        "from tests.support import cputime\n\n"
                                        "def pytest_configure(config):\n    cputime.register(config)\n")


def test_each_test_is_charged_its_own_and_its_childrens_cpu(tmp_path):
    project(tmp_path)
    ledger = tmp_path / "ledger"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit/test_busy.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "KAFKA_REPLICATION_CPU_LEDGER": str(ledger)})
    assert done.returncode == 0, done.stdout + done.stderr
    found = durations.ledger(ledger)
    assert sorted(found) == ["tests/unit/test_busy.py::test_child", "tests/unit/test_busy.py::test_own"]
    wall, own, children = found["tests/unit/test_busy.py::test_child"]
    assert children >= 0.55 and own < 0.3 and wall >= children * 0.9
    wall, own, children = found["tests/unit/test_busy.py::test_own"]
    assert own >= 0.38 and children < 0.05


def test_without_the_variable_nothing_is_written(tmp_path):
    project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_REPLICATION_CPU_LEDGER"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "own",
                           "tests/unit/test_busy.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conftest.py", "tests"]


def test_the_summary_sums_by_tier_and_names_the_costliest_tests(tmp_path):
    (tmp_path / "1.tsv").write_text("tests/runtime/test_a.py::test_x\t100.00\t10.00\t170.00\n"
                                    "tests/unit/test_b.py::test_y\t5.00\t4.00\t0.00\n")
    (tmp_path / "2.tsv").write_text("tests/runtime/test_a.py::test_z\t60.00\t2.00\t34.00\n"
                                    "tests/runtime/test_a.py::test_cut\t6")  # a line a stopped run cut short
    assert durations.cpu_report(durations.ledger(tmp_path), top=2).splitlines() == [
        "CPU: 3.7 CPU-minutes in 3 tests (on 2 cores, at least 1.8 minutes of wall time)",
        "| tier | tests | wall min (its processes') | CPU min | of which children's |",
        "| --- | ---: | ---: | ---: | ---: |",
        "| runtime | 2 | 2.7 | 3.6 | 3.4 |",
        "| unit | 1 | 0.1 | 0.1 | 0.0 |",
        "",
        "| test | CPU s | wall s |",
        "| --- | ---: | ---: |",
        "| tests/runtime/test_a.py::test_x | 180 | 100 |",
        "| tests/runtime/test_a.py::test_z | 36 | 60 |"]
