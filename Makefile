# The README's two commands: `make demo` (set up and run the end-to-end demo; `make demo-stop` ends it)
# and `make test`.
.PHONY: setup demo demo-stop test clean

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
