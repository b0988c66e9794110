# The two entry points of README: `make render` and `make test`.
# Both create the project virtualenv (.venv) on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STACK ?= dev
OUT ?= build/render/$(STACK)

.PHONY: render test audit venv schema apiserver clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

venv: $(BIN)/.installed

# Offline render of a stack: every Kubernetes object, outputs.json and a preview summary.
# No cluster and no Pulumi CLI; missing secret config is filled with visible placeholders.
render: venv
	$(BIN)/python -m infra render --stack $(STACK) --out $(OUT) --placeholder-secrets

test: venv apiserver
	$(BIN)/python -m pytest

# The real kube-apiserver of the API-server tier (docs/apiserver.md), built once into ~/.cache
# (root, apt, a few minutes). Without it that tier skips, unless APISERVER_REQUIRED=1 (CI).
apiserver:
	@bash tests/apiserver/build.sh >/dev/null || { test "$$APISERVER_REQUIRED" != 1 && \
	  echo "kube-apiserver could not be built: the API-server tier will skip (docs/apiserver.md)"; }

# The replication audit on a generated sample with injected faults (docs/audit.md): the audit
# must exit 1 (findings) and name each fault.
audit: venv
	$(BIN)/python -m spark.sample build/audit-sample
	$(BIN)/python -m spark.audit --local build/audit-sample --out build/audit --master 'local[2]'; \
	  code=$$?; echo "exit code $$code (1 = findings: the sample's injected faults)"; test $$code -eq 1

schema: venv
	$(BIN)/python -m infra schema

clean:
	rm -rf build .pytest_cache .hypothesis
