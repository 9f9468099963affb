# The README's two commands: `make demo` (set up and run the main job) and `make test`.
.PHONY: setup demo test bench-quick clean

setup:
	./scripts/bootstrap.sh

demo: setup
	.venv/bin/ftops demo

test: setup
	./scripts/run-tests.sh

clean:
	rm -rf .venv .tools .pytest_cache .hypothesis
