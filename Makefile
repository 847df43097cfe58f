# The two commands of the contract: `make run` and `make test`. Each works on a
# fresh machine with only Python 3.11+ and make: it creates .venv and installs first.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run prod test install install-test migrate seed clean

run: install migrate seed
	@echo "Virtual Office: http://$(HOST):$(PORT)/  (demo user: demo / demo, also an admin at /admin/)"
	$(BIN)/daphne -b $(HOST) -p $(PORT) office.asgi:application

# The production topology (Daphne processes, Celery workers and beat under supervisord)
# from DATABASE_URL, REDIS_URL and SECRET_KEY; see README.md, "Running in production".
prod: install
	deploy/prod

test: install-test
	$(BIN)/python -m pytest

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(VENV)/.installed $@

migrate: install
	$(BIN)/python manage.py migrate --noinput

seed: install
	$(BIN)/python manage.py seed_demo

clean:
	rm -rf $(VENV) *.egg-info test-db.sqlite3* staticfiles run
