# Two commands do everything on a fresh machine: `make run` and `make test`; `make check` is the fast tier.
.PHONY: run test check lint setup bench bench-smoke

run:
	@bash scripts/run.sh

test:
	@bash scripts/test.sh

check:
	@bash scripts/check.sh

lint:
	@bash -c 'source scripts/env.sh && bash scripts/setup.sh && ruff check .'

setup:
	@bash scripts/setup.sh --test

bench:
	@bash scripts/bench.sh

bench-smoke:
	@bash scripts/bench.sh --quick
