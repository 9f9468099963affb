# The README's two commands: `make demo` (set up and run the end-to-end demo; `make demo-stop` ends it)
# and `make test`.
.PHONY: setup demo demo-stop test clean

setup:
	./scripts/bootstrap.sh

# Bytecode caches in .state/pycache even where PYTHONDONTWRITEBYTECODE is set (as on the project's own
# machines): otherwise every Airflow process of the stack compiles Airflow again (6.4 s instead of 2.4 s).
demo: setup
	PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX="$(CURDIR)/.state/pycache" .venv/bin/ftops stack demo

demo-stop: setup
	.venv/bin/ftops stack down

test: setup
	./scripts/run-tests.sh

clean:
	rm -rf .venv .tools .pytest_cache .hypothesis
