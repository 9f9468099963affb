# The README's two commands: `make demo` (set up and run the end-to-end demo; `make demo-stop` ends it)
# and `make test` (the whole suite, what CI runs); and contributors' `make check` (the tests that need neither a
# JVM nor Airflow processes, a few minutes: CONTRIBUTING.md).
.PHONY: setup demo demo-stop test check clean

# Bytecode caches in .state/pycache, outside the tree, even where PYTHONDONTWRITEBYTECODE is set (as on the
# project's own machines; uv installs no .pyc files): the demo's and the tests' hundreds of Python processes
# (ftops commands, Airflow's components and tasks, Spark drivers) would each compile what they import
# (importing Airflow: 6.4 s, against 2.4 s).
export PYTHONPYCACHEPREFIX := $(CURDIR)/.state/pycache
unexport PYTHONDONTWRITEBYTECODE

setup:
	./scripts/bootstrap.sh

demo: setup
	.venv/bin/ftops stack demo

demo-stop: setup
	.venv/bin/ftops stack down

test: setup
	./scripts/run-tests.sh

# Set up without asking for Java (the tier needs none), then the quick tier.
check:
	FTOPS_SETUP_WITHOUT_JAVA=1 ./scripts/bootstrap.sh
	./scripts/run-check.sh

clean:
	rm -rf .venv .tools .pytest_cache .hypothesis
