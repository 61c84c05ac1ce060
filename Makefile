# The checks CI runs before the tests (.ci/run): lint and types.
.PHONY: check lint types test

check: lint types

lint:
	python -m ruff check arena tests scripts

types:
	python -m mypy

test:
	python -m pytest -q
