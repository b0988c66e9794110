"""tools/cpu.py, the CPU by kind of process docs/performance.md quotes: the kinds it tells apart
(from the command lines the suite's processes really have), its start-and-alive line, a run
that sees a busy process, and its refusal of an interval that is not a number of seconds over 0."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest

from tests.support.stacks import ROOT

TOOL = ROOT / "tools" / "cpu.py"
spec = importlib.util.spec_from_file_location("cpu_tool", TOOL)
cpu = importlib.util.module_from_spec(spec)
sys.modules["cpu_tool"] = cpu  # dataclasses look their module up there
spec.loader.exec_module(cpu)


@pytest.mark.parametrize(("cmdline", "kind"), [
    ("/usr/bin/java -Xms64m -cp /c/kafka/* kafka.Kafka /tmp/r/kafka/us-east/server.properties", "Kafka broker"),
    ("/usr/bin/java -cp /c/kafka/* kafka.tools.StorageTool format -t abc -c server.properties", "Kafka storage formatting"),
    ("/usr/bin/java -cp /c/connect/* org.apache.kafka.connect.cli.ConnectDistributed worker.properties", "Connect worker"),
    ("/usr/bin/java -cp /s/jars/* -Xmx1g org.apache.spark.deploy.SparkSubmit --jars /c/kafka-clients.jar pyspark-shell",
     "Spark driver"),
    ("/usr/bin/java -cp /tmp/r/clients:/c/kafka/* Clients", "clients JVM (rehearsal)"),
    ("/root/.cache/k/engine/kube-apiserver/v1.37.2/kube-apiserver --etcd-servers=http://127.0.0.1:1", "kube-apiserver"),
    ("/v/.venv/bin/python -m pytest tests/conformance tests/audit tests/unit", "pytest"),
    ("/v/.venv/bin/python -B -c from multiprocessing.spawn import spawn_main", "Python, spawned workers"),
    ("/usr/local/bin/pulumi preview --stack dev", "Pulumi CLI"),
    ("/root/.pulumi/plugins/resource-kubernetes/pulumi-resource-kubernetes 39211", "Pulumi provider"),
    ("/usr/bin/openssl req -new", "other: openssl"),
])
def test_each_kind_is_told_from_its_command_line(cmdline, kind):
    assert cpu.kind_of(cmdline) == kind


def test_the_fit_separates_the_start_from_the_minutes_alive():
    rows = [(minutes, 3.0 + 2.5 * minutes) for minutes in (0.5, 1, 2, 4, 8)]
    start, per_minute = cpu.fit(rows)
    assert (round(start, 6), round(per_minute, 6)) == (3.0, 2.5)
    assert cpu.fit(rows[:4]) is None  # fewer than five processes: no line


def test_a_run_sees_a_busy_process_and_its_cpu(tmp_path):
    # The tool reads every process on the machine, and CI runs other Python processes beside this
    # one: the busy process runs under a name of its own so that its line counts it alone. It idles
    # until the tool has surely taken its first sample, spins 2.4 s of CPU, ends the tool's run and
    # stays alive past the tool's last sample: no wall-clock guess, however loaded the machine.
    done, probe = tmp_path / "done", tmp_path / "busy-probe"
    probe.symlink_to(os.path.realpath(sys.executable))
    busy = subprocess.Popen([str(probe), "-I", "-c", "import sys, time\ntime.sleep(2)\nt = time.process_time()\n"
                             "while time.process_time() - t < 2.4: pass\n"
                             "open(sys.argv[1], 'w').close()\ntime.sleep(2)\n", str(done)])
    run = subprocess.run([sys.executable, str(TOOL), "--every", "0.2", "--until", str(done)], capture_output=True,
                         text=True, timeout=60)
    busy.wait(30)
    assert (run.returncode, run.stderr) == (0, "")
    header, *lines, last = run.stdout.splitlines()
    assert header.split() == ["kind", "processes", "CPU", "min", "share", "start", "s", "+", "s/min", "alive", "(fit)"]
    (probe_line,) = [line for line in lines if line.startswith("other: busy-probe ")]
    assert probe_line.split()[2:4] == ["1", "0.04"], probe_line  # one process, 2.4 s of CPU in minutes
    assert re.fullmatch(r"all +\d+ +\d+\.\d\d", last), last


def test_an_interval_of_zero_is_refused():
    run = subprocess.run([sys.executable, str(TOOL), "--every", "0"], capture_output=True, text=True, timeout=60)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr.endswith("python3 tools/cpu.py: error: --every takes a number of seconds over 0\n")
