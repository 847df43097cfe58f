"""What the benchmarks that use the ORM share: a throwaway database, and progress that does not flood."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator

from django.db import connection

Progress = Callable[[str], None]


@contextlib.contextmanager
def throwaway_database(prefix: str = "bench-") -> Iterator[str]:
    """A fresh, migrated database on the configured engine (as the tests get: a SQLite file in a
    temporary directory, or a PostgreSQL database `test_<name>_<process id>`), removed afterwards; yields its vendor.

    A benchmark writes thousands of tasks; none of it belongs in a real office's database.
    """
    directory, test = None, connection.settings_dict.setdefault("TEST", {})
    if connection.vendor == "sqlite":
        directory = tempfile.mkdtemp(prefix=prefix)
        test["NAME"] = os.path.join(directory, "bench.sqlite3")
    else:
        # Its own name: a second run at the same time (or the test suite) must not drop this one's.
        test["NAME"] = f"test_{connection.settings_dict['NAME']}_{os.getpid()}"
    original = connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        yield connection.vendor
    finally:
        connection.creation.destroy_test_db(original, verbosity=0)
        if directory:
            shutil.rmtree(directory, ignore_errors=True)


def every(n: int, progress: Progress, prefix: str) -> Progress:
    """Pass on every n-th line only: a 10,000-task catch-up folds thousands of times."""
    count = 0

    def report(line: str) -> None:
        nonlocal count
        count += 1
        if count % n == 0:
            progress(prefix + line)

    return report
