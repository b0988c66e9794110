"""The engine tier's harness: a Pulumi home with the Kubernetes provider installed from the file
tools/engine/build.sh built, a local file backend with a passphrase, one project directory per
stack, and each operation run by the real CLI (tests/engine/driver.py serves the program).

Nothing here writes to a cluster: the CLI and the provider do. The API servers are the
API-server tier's (infra/tools/rehearsal/apiserver.py).

The policy pack (policy/) runs as an executable analyzer: a directory pack is started through
the Python language host, which cannot be built here (not on the Go module proxy), and the CLI
also takes `--policy-pack <executable>`, launching it directly as an analyzer plugin with the
engine's address as its argument and reading the PulumiPolicy.yaml beside it
(pkg/resource/plugin/analyzer_plugin.go NewPolicyAnalyzer, v3.274.1). `Engine.policy_pack`
writes that executable: it serves policy/ with this virtualenv's Python, as the language host
would (`python -m pulumi.policy <engine> <pack directory>`).
"""

from __future__ import annotations

import json
import os
import secrets as random_secrets
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.tools.rehearsal.apiserver import built, built_version
from tests.support.processes import run_kept

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "kafka-replication"
# Engine operations, as `resourcePreEvent` names them (apitype.OpType).
CREATE, UPDATE, REPLACE, DELETE, SAME = "create", "update", "replace", "delete", "same"
REPLACEMENT = {"replace", "create-replacement", "delete-replaced"}
DEFAULT_PROVIDER = "::pulumi:providers:kubernetes::default_"
ENGINE_TYPES = ("pulumi:pulumi:Stack", "pulumi:pulumi:StackReference", "pulumi:providers:pulumi")


@dataclass
class Run:
    """One CLI run: its exit code, what it printed, and the engine's resource steps."""
    code: int
    stdout: str
    stderr: str
    events: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    policy: list[dict[str, Any]] = field(default_factory=list)  # the policy packs' events (driver.py)

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def steps(self) -> dict[str, str]:
        """URN -> operation of every resource the program registers (the stack and the default
        providers, which the engine adds, left out). A replacement is three steps of one URN
        (create-replacement, replace, delete-replaced, or deleted first for a named object): it
        reads as `replace`."""
        ops: dict[str, set[str]] = {}
        for e in self.events:
            # The stack, the default providers, and the program's read of its own previous
            # outputs (a StackReference, through the `pulumi` package's provider): the engine's, not
            # objects the program declares.
            if e["type"] in ENGINE_TYPES or DEFAULT_PROVIDER in e["urn"]:
                continue
            ops.setdefault(e["urn"], set()).add(e["op"])
        out = {}
        for urn, seen in ops.items():
            # `preview --refresh` and `up --refresh` read each resource first (a `refresh` step):
            # not a change, beside the step that follows.
            if len(seen) > 1:
                seen.discard("refresh")
            if seen & REPLACEMENT:
                out[urn] = REPLACE
            else:
                assert len(seen) == 1, (urn, seen)
                out[urn] = seen.pop()
        return out

    def changes(self) -> dict[str, str]:
        """The steps that change something (every operation but `same`)."""
        return {urn: op for urn, op in self.steps().items() if op != SAME}


@dataclass
class Engine:
    directory: Path
    pulumi: Path
    passphrase: str = field(default_factory=lambda: f"engine-{random_secrets.token_hex(8)}")

    @property
    def home(self) -> Path:
        return self.directory / "home"

    def state(self, project: Path) -> Path:
        """The file backend of a project: one per project (stack names repeat between tests),
        shared by the consumer projects that read it."""
        reads = project / ".reads"
        return self.directory / "state" / (reads.read_text() if reads.exists() else project.name)

    def env(self, project: Path, kubeconfig: Path | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "KUBE"))}
        env.update({
            "PATH": f"{self.pulumi.parent}{os.pathsep}{env.get('PATH', '')}",
            "PULUMI_HOME": str(self.home),
            "PULUMI_BACKEND_URL": f"file://{self.state(project)}",
            "PULUMI_CONFIG_PASSPHRASE": self.passphrase,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            # Every plugin is installed from a file here: nothing may be downloaded.
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true",
            "PULUMI_COPILOT": "false",
            "NO_COLOR": "1",
            # No kubeconfig of the machine's: each test names the one it means.
            "KUBECONFIG": str(kubeconfig or self.directory / "no-kubeconfig"),
        })
        return env

    def cli(self, *args: str, cwd: Path, kubeconfig: Path | None = None, check: bool = True,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """The CLI itself, as a user types it (stack init, config set --secret, stack output...)."""
        done = run_kept([str(self.pulumi), "--non-interactive", *args], cwd=cwd, env=self.env(cwd, kubeconfig),
                        timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"pulumi {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    def set_secret(self, project: Path, stack: str, key: str, value: str) -> subprocess.CompletedProcess[str]:
        """`pulumi config set --secret <project>:<key> -- <value>`, as README writes it (the `--`
        keeps a value that starts with a dash, a PEM block, from being read as a flag)."""
        return self.cli("config", "set", "--secret", "--stack", stack, f"{PROJECT}:{key}", "--", value, cwd=project)

    def run(self, operation: str, project: Path, stack: str, *, kubeconfig: Path | None = None,
            expect_no_changes: bool = False, program: str = PROJECT, reference: str | None = None,
            policy_packs: tuple[Path, ...] = (), timeout: float = 900, refresh: bool = False,
            env: dict[str, str] | None = None) -> Run:
        """`pulumi <operation>` with the program served inline (tests/engine/driver.py), with
        `--policy-pack` for each of `policy_packs` and `env` beside the engine's own variables."""
        events = project / f".events-{operation}.json"
        policy_events = project / f".policy-events-{operation}.json"
        argv = [sys.executable, "-m", "tests.engine.driver", operation, "--dir", str(project), "--stack", stack,
                "--events", str(events), "--program", program]
        if expect_no_changes:
            argv.append("--expect-no-changes")
        if refresh:
            argv.append("--refresh")
        if reference:
            argv += ["--reference", reference]
        for pack in policy_packs:
            argv += ["--policy-pack", str(pack)]
        if policy_packs:
            argv += ["--policy-events", str(policy_events)]
        started = time.monotonic()
        # In a session the keeper guards: the CLI's plugins, each in a process group of its own,
        # end with the run even when it is stopped from outside (tests/support/processes.py).
        done = run_kept(argv, cwd=ROOT, env={**self.env(project, kubeconfig), **(env or {})}, timeout=timeout)
        seconds = time.monotonic() - started
        recorded = json.loads(events.read_text()) if events.exists() else []
        events.unlink(missing_ok=True)
        policy = json.loads(policy_events.read_text()) if policy_events.exists() else []
        policy_events.unlink(missing_ok=True)
        return Run(done.returncode, done.stdout, done.stderr, recorded, seconds, policy)

    def project(self, stack: str, name: str | None = None) -> Path:
        """A project directory for `stack`: the repository's Pulumi.yaml and Pulumi.<stack>.yaml
        (so that `pulumi config set` never writes into the repository), and the stack created
        in the file backend."""
        directory = self.directory / "projects" / (name or stack)
        directory.mkdir(parents=True)
        shutil.copy(ROOT / "Pulumi.yaml", directory)
        shutil.copy(ROOT / f"Pulumi.{stack}.yaml", directory)
        self.state(directory).mkdir(parents=True)
        self.cli("stack", "init", stack, cwd=directory)
        return directory

    def consumer(self, name: str, reads: Path) -> Path:
        """The project of another team reading our outputs (tests/engine/driver.py's consumer),
        in the backend of the project it `reads`."""
        directory = self.directory / "projects" / name
        directory.mkdir(parents=True)
        (directory / "Pulumi.yaml").write_text(f"name: {name}\nruntime: python\n")
        (directory / ".reads").write_text(reads.name)
        self.cli("stack", "init", "consumer", cwd=directory)
        return directory

    def plain_project(self, name: str, stack: str) -> Path:
        """A project of its own (no config of ours): another team's program, served by the driver."""
        directory = self.directory / "projects" / name
        directory.mkdir(parents=True)
        (directory / "Pulumi.yaml").write_text(f"name: {name}\nruntime: python\n")
        self.state(directory).mkdir(parents=True)
        self.cli("stack", "init", stack, cwd=directory)
        return directory

    def policy_pack(self) -> Path:
        """policy/ as an executable analyzer (see the module's docstring), beside a copy of its
        PulumiPolicy.yaml (the pack's version and description)."""
        directory = self.directory / "policy-pack"
        launcher = directory / "kafka-replication-policy"
        if not launcher.exists():
            directory.mkdir()
            shutil.copy(ROOT / "policy" / "PulumiPolicy.yaml", directory)
            launcher.write_text("#!/bin/sh\n# The engine passes its address; pulumi.policy runs the pack's __main__.py.\n"
                                f'exec {shlex.quote(sys.executable)} -u -m pulumi.policy "$@" '
                                f"{shlex.quote(str(ROOT / 'policy'))}\n")
            launcher.chmod(0o755)
        return launcher

    def state_text(self, project: Path) -> str:
        """Every file of the project's backend (checkpoints, history, backups), as text."""
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.state(project).rglob("*")) if p.is_file())


def start(directory: Path) -> Engine:
    """The engine in `directory`: the CLI and the provider plugin, installed from the files
    tools/engine/build.sh built. Raises LookupError naming what is not built."""
    pulumi, provider = built("pulumi"), built("pulumi-kubernetes")
    missing = [n for n, p in (("pulumi", pulumi), ("pulumi-kubernetes", provider)) if p is None]
    if missing:
        raise LookupError(f"not built: {', '.join(missing)} (run tools/engine/build.sh)")
    assert pulumi is not None and provider is not None
    engine = Engine(directory, pulumi)
    engine.home.mkdir(parents=True)
    (directory / "state" / directory.name).mkdir(parents=True)
    engine.cli("plugin", "install", "resource", "kubernetes", built_version("pulumi-kubernetes"),
               "--file", str(provider), cwd=directory)
    return engine
