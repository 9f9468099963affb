# The README's two commands: `make demo` (set up and run the end-to-end demo; `make demo-stop` ends it)
# and `make test`.
.PHONY: setup demo demo-stop test clean

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

clean:
	rm -rf .venv .tools .pytest_cache .hypothesis
