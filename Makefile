# The two commands of the README. Each creates the virtual environment it needs.
PYTHON ?= python3
UV := .tools/bin/uv
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := .venv

.PHONY: run test check lint typecheck pytest fast-tests system-deps screenshots lighthouse

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet --disable-pip-version-check 'uv>=0.5'

.venv/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --locked --quiet --compile-bytecode
	touch $@

## run: migrate, print a demo key on a new database, and serve the API and SMTP
run: .venv/.synced
	.venv/bin/maskmail up --demo

## test: lint, type-check and run every test (PostgreSQL and Redis must be running)
test: .venv/.synced system-deps lint typecheck pytest

## check: lint, type-check and the fast tests, for the edit-test loop (CI runs `make test`)
check: .venv/.synced lint typecheck fast-tests

system-deps:
	bash scripts/system-deps.sh

lint:
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

typecheck:
	.venv/bin/mypy

# Two passes: the tests not marked slow on two workers (`make check` keeps them safe there),
# then the slow set in one process, since its timings assume a machine of its own.
pytest:
	.venv/bin/pytest -m "not slow" -n 2
	.venv/bin/pytest -m slow

# Two workers, and a few examples per property test; `make test` runs every example in one process.
# The slow set, left out here, holds the tests that take long and those that run a program
# only `make test` installs (scripts/system-deps.sh): a fresh clone passes without them.
fast-tests:
	.venv/bin/pytest -m "not slow" -q -x -n 2 --hypothesis-profile=check

## screenshots: retake the dashboard's screenshots (docs/images) and the users' guide's (static/help)
screenshots: .venv/.synced
	.venv/bin/python scripts/dashboard_screenshots.py

## lighthouse: Lighthouse's accessibility and best-practices scores of every page, both themes
lighthouse: .venv/.synced
	.venv/bin/python scripts/lighthouse.py
