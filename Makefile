# The two entry points of README: `make render` and `make test`.
# Both create the project virtualenv (.venv) on first use, from the locked versions in
# requirements/ (`make lock` writes them from pyproject.toml): render installs what the deploy
# imports, test adds the audit job's libraries and the test tools.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= dev
OUT ?= build/render/$(STACK)

.PHONY: render rehearse outputs-schema python-types policy-pack kube-apiserver test test-unit test-conformance test-audit test-apiserver test-runtime test-engine typecheck audit venv venv-deploy schema provider-schema apiserver engine promtool dashboard-picture shellcheck prometheus-crds grafana-crds strimzi-crds clean lock

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(BIN)/.deploy: requirements/deploy.txt pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements/deploy.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

$(BIN)/.test: requirements/test.txt pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements/test.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@ $(BIN)/.deploy

venv-deploy: $(BIN)/.deploy
venv: $(BIN)/.test

# Offline render of a stack: every Kubernetes object, outputs.json and a preview summary.
# No cluster and no Pulumi CLI; missing secret config is filled with visible placeholders.
render: venv-deploy
	$(BIN)/python -m infra render --stack $(STACK) --out $(OUT) --placeholder-secrets

# The stack's replication on this machine: Kafka, Connect and MirrorMaker 2 for real
# (docs/rehearsal.md). Root, Java 17, Maven; the test level's libraries (etcd for the API server).
# REHEARSE_ARGS: by default the connectors that need a class no jar here provides (prod's Cloudera
# SMTs) are named and left out; `REHEARSE_ARGS="--plugin-path DIR"` loads your plugins instead.
REHEARSE_ARGS ?= --allow-missing
rehearse: venv kube-apiserver
	$(BIN)/python -m infra rehearse stacks/$(STACK).yaml $(REHEARSE_ARGS)

# The test tiers, a folder each under tests/ (docs/architecture.md), each installing what it needs:
#   unit         pure code and the mock engine: Python only (no Java, Go or binaries)
#   conformance  the modelled Connect worker and the oracles (the JDK, promtool)
#   audit        the PySpark job on a local Spark (Java 17, Maven for the Kafka source's jars)
#   apiserver    a real kube-apiserver (the engine binaries)
#   runtime      Kafka, Connect and MirrorMaker 2 for real (Java 17, Maven; the API server)
#   engine       the Pulumi CLI and its provider, the workflows' checkers
PYTEST := $(BIN)/python -m pytest
test-unit: venv
	$(PYTEST) tests/unit
test-conformance: venv promtool prometheus-crds grafana-crds
	$(PYTEST) tests/conformance
test-audit: venv
	$(PYTEST) tests/audit
test-apiserver: venv engine prometheus-crds grafana-crds
	$(PYTEST) tests/apiserver
test-runtime: venv kube-apiserver
	$(PYTEST) tests/runtime
test-engine: venv engine shellcheck prometheus-crds grafana-crds
	$(PYTEST) tests/engine

# Every tier, in three runs side by side (2 cores: each run is mostly one Python process waiting on
# servers and JVMs, or a Go build):
#   - the tiers that need no Go binary: conformance, audit, unit (the unit tier last:
#     tests/unit/test_verdicts.py reads the documents every test before it handed the pipeline);
#   - kube-apiserver and kubectl built first (the binaries the runtime tier needs), then the runtime tier;
#   - meanwhile the other binaries, then the API-server and engine tiers;
#   - once the first run is done, a second runtime process, and once the API-server and engine
#     tiers are done, a third: they share the tier's tests, each test run by one of them, a
#     test marked heavy (the prod stack) while no other is (tests/support/shared_queue.py). A
#     runtime test waits on brokers and workers about half of its time, and the tier is the
#     longest: two runtime processes alone keep the cores 55-65 % busy (measured,
#     docs/performance.md), three use what the other tiers leave.
# Cold, the builds take about 17 minutes in all; warm they are found at once. The background runs'
# output is kept in build/tier-*.log and printed after the first run's, then each tier's CPU time and
# the costliest tests (tests/support/cputime.py: on two shared cores, what a test costs is its CPU,
# not its wall time). The target fails if a build or a run failed.
BUILD := bash tools/engine/build.sh
SHARED_RUNTIME := KAFKA_REPLICATION_TEST_QUEUE=$(CURDIR)/build/runtime-queue $(PYTEST) --durations=0 --durations-min=1 tests/runtime
test: venv promtool shellcheck prometheus-crds grafana-crds
	@mkdir -p build; rm -rf build/*.status build/*.log build/runtime-queue build/cpu; \
	export KAFKA_REPLICATION_CPU_LEDGER=$(CURDIR)/build/cpu; \
	{ $(BUILD) kube-apiserver kubectl toxiproxy-server > build/tier-runtime.log 2>&1; echo $$? > build/kube-apiserver.status; \
	  { $(SHARED_RUNTIME) >> build/tier-runtime.log 2>&1; echo $$? > build/tier-runtime.status; } & \
	  $(BUILD) > build/tier-engine.log 2>&1; echo $$? > build/binaries.status; \
	  $(PYTEST) tests/apiserver tests/engine >> build/tier-engine.log 2>&1; echo $$? > build/tier-engine.status; \
	  $(SHARED_RUNTIME) > build/tier-runtime-3.log 2>&1; echo $$? > build/tier-runtime-3.status; \
	  wait; } & \
	$(PYTEST) tests/conformance tests/audit tests/unit; first=$$?; \
	while ! test -e build/kube-apiserver.status; do sleep 5; done; \
	echo "a second runtime process, sharing the tier's tests (build/tier-runtime-2.log)"; \
	$(SHARED_RUNTIME) > build/tier-runtime-2.log 2>&1; echo $$? > build/tier-runtime-2.status; \
	echo "waiting for the runtime, API-server and engine tiers (build/tier-runtime.log, build/tier-engine.log)"; \
	wait; cat build/tier-runtime.log build/tier-runtime-2.log build/tier-runtime-3.log build/tier-engine.log; \
	$(BIN)/python tools/durations.py --cpu build/cpu || true; \
	for s in tier-runtime tier-runtime-2 tier-runtime-3 tier-engine; do \
	  test "$$(cat build/$$s.status)" -eq 0 || { echo "make test: $$s failed"; first=1; }; done; \
	for s in kube-apiserver binaries; do test "$$(cat build/$$s.status)" -eq 0 || \
	  if test "$$APISERVER_REQUIRED" = 1; then echo "make test: the $$s build failed"; first=1; \
	  else echo "the $$s build failed: the tiers that need it skipped (docs/engine.md)"; fi; done; \
	test $$first -eq 0

# mypy --strict on infra/ and components/ ([tool.mypy] in pyproject.toml); `make test` runs it
# too (tests/unit/test_typing.py).
typecheck: venv
	$(BIN)/python -m mypy

# Re-resolve the locked versions (uv, in its own virtualenv) after changing pyproject.toml.
UV := .tools/bin/uv
UV_COMPILE := --quiet --python-version 3.11 --no-annotate --custom-compile-command "make lock"
$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet uv==0.13.8

# Three levels: test (everything), deploy (what `pulumi up` imports) and audit (the `audit` extra
# alone, for the audit image: the job needs no deployer library), the last two at the test level's
# versions, so that what is deployed runs on the versions the tests ran (protobuf, say, which the
# policy pack's SDK holds below 6).
lock: $(UV)
	mkdir -p requirements
	UV_PYTHON_DOWNLOADS=never $(UV) pip compile $(UV_COMPILE) --extra test pyproject.toml -o requirements/test.txt
	UV_PYTHON_DOWNLOADS=never $(UV) pip compile $(UV_COMPILE) -c requirements/test.txt pyproject.toml -o requirements/deploy.txt
	$(PYTHON) -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["audit"], sep="\n")' > .tools/audit.in
	UV_PYTHON_DOWNLOADS=never $(UV) pip compile $(UV_COMPILE) -c requirements/test.txt .tools/audit.in -o requirements/audit.txt

# The Go binaries of the API-server and engine tiers (docs/engine.md): kube-apiserver and kubectl
# (Kubernetes 1.37), the Pulumi CLI and its Kubernetes provider, and actionlint (the workflows'
# checker, docs/workflow.md), built from the Go module proxy at the pins of tools/engine/*/go.mod
# into ~/.cache, once per pin (about 17 minutes cold on 2 cores).
# Without them those tiers skip, unless APISERVER_REQUIRED=1 (CI), where they fail.
apiserver engine:
	@bash tools/engine/build.sh >/dev/null || { test "$$APISERVER_REQUIRED" != 1 && \
	  echo "the engine binaries could not be built: the API-server and engine tiers will skip (docs/engine.md)"; }

# kube-apiserver and kubectl: the binaries the runtime tier needs (its operator stand-in's API
# server, and kubectl for the runbook lines it runs as written), and toxiproxy-server (the fault
# proxy of the rehearsal's links).
kube-apiserver:
	@bash tools/engine/build.sh kube-apiserver kubectl toxiproxy-server >/dev/null || { test "$$APISERVER_REQUIRED" != 1 && \
	  echo "kube-apiserver could not be built: the runtime tier will skip (docs/engine.md)"; }

# promtool, from Debian's prometheus package unpacked into ~/.cache (the service is not installed):
# tests/unit/test_monitoring.py checks and unit-tests the alert rules with it. Root and apt, as for the
# API server; without it those tests skip, unless APISERVER_REQUIRED=1 (CI).
CACHE := $(HOME)/.cache/kafka-replication
PROMTOOL := $(CACHE)/promtool/usr/bin/promtool
# $(call debian,<package>,<folder under CACHE>,<what skips without it>): the package's files
# unpacked into $(CACHE)/<folder>, once; without apt, a message, or a failure under CI.
debian = { d=$$(mktemp -d) && cd $$d && \
	  { apt-get download $(1) >/dev/null 2>&1 || { apt-get update -qq && apt-get download $(1); }; } && \
	  mkdir -p $(CACHE)/$(2) && dpkg-deb -x $(1)_*.deb $(CACHE)/$(2) && rm -rf $$d; } || \
	  { test "$$APISERVER_REQUIRED" != 1 && echo "$(2) could not be installed: $(3) will skip"; }
promtool:
	@test -x $(PROMTOOL) || $(call debian,prometheus,promtool,the rule tests)

# shellcheck, from Debian's package unpacked into ~/.cache as promtool is: actionlint hands it the
# workflows' `run:` scripts (tests/engine/test_workflows.py; GitHub's runners have it on the PATH).
SHELLCHECK := $(CACHE)/shellcheck/usr/bin/shellcheck
shellcheck:
	@command -v shellcheck >/dev/null || test -x $(SHELLCHECK) || $(call debian,shellcheck,shellcheck,the workflow script check)

# The Prometheus Operator's PodMonitor and PrometheusRule CRDs (tools/prometheus-operator/go.mod)
# into ~/.cache, for the API-server tier (Go and its module proxy).
# Strimzi's CRDs of every supported release's Strimzi line, generated from its published artifacts
# (infra/tools/rehearsal/crds.py, tools/strimzi-crds/pom.xml; Maven and Java 21 or newer). The
# tiers that validate against them generate them on first use; this fills the cache ahead.
strimzi-crds: venv
	@$(BIN)/python -c "from infra.tools.rehearsal import crds; [print(crds.folder(v)) for v in crds.LINES]"

prometheus-crds:
	@bash tools/prometheus-operator/crds.sh >/dev/null || { test "$$APISERVER_REQUIRED" != 1 && \
	  echo "the Prometheus Operator CRDs could not be downloaded: their API-server tests will skip"; }
# grafana-operator's GrafanaDashboard CRD (tools/grafana-operator/go.mod) into ~/.cache, for the
# conformance, API-server and engine tiers (Go and its module proxy).
grafana-crds:
	@bash tools/grafana-operator/crds.sh >/dev/null || { test "$$APISERVER_REQUIRED" != 1 && \
	  echo "grafana-operator's GrafanaDashboard CRD could not be downloaded: its tests will skip"; }

# The replication audit on a generated sample with injected faults (docs/audit.md): the audit
# must exit 1 (findings) and name each fault.
audit: venv
	$(BIN)/python -m infra.tools.sample build/audit-sample
	$(BIN)/python -m spark.audit --local build/audit-sample --out build/audit --master 'local[2]'; \
	  code=$$?; echo "exit code $$code (1 = findings: the sample's injected faults)"; test $$code -eq 1

# The dashboard drawn from a recorded fault (docs/operations.md#what-on-call-sees): its queries
# answered by Prometheus (Debian's package, as promtool) over the stored recording.
dashboard-picture: venv promtool
	$(BIN)/python -m tests.support.dashboard_picture

# The topology's JSON Schema (docs/topology.schema.json), from the model: the stack files name it
# in their yaml-language-server modeline; tests/unit/test_topology_schema.py holds the committed
# file to the model.
schema: venv-deploy
	$(BIN)/python -m infra schema > docs/topology.schema.json

# The policy pack as organisations publish it (docs/policy.md#publishing-it): one folder with its
# rules and the versions they need, written from policy/ (infra/tools/policy_pack.py).
policy-pack: venv-deploy
	$(BIN)/python -m infra.tools.policy_pack build/policy-pack

# The topology's fields and the outputs contract as Python types (components/topology_types.py,
# contract/output_types.py), from their JSON Schemas: the components' arguments and outputs for
# type checkers and editors (tests/unit/test_python_types.py).
python-types: venv-deploy
	$(BIN)/python -m infra.tools.python_types

# The stack outputs' JSON Schema (docs/outputs.schema.json), from its one definition in
# contract/outputs.py (tests/unit/test_outputs_contract.py holds the committed file to it).
outputs-schema:
	$(PYTHON) -m contract.outputs > docs/outputs.schema.json

# The component provider's Pulumi package schema (components/schema.json), from the code.
provider-schema: venv-deploy
	$(BIN)/python -c 'import json; from components.replication import provider_schema; \
	  print(json.dumps(provider_schema(), indent=2, sort_keys=True))' > components/schema.json

clean:
	rm -rf build .pytest_cache .hypothesis .tools
