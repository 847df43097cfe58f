"""bench_upkeep: whether the upkeep after each task (indexing, memory extraction, folds) stays flat as a session grows.

The conversation is bench_context's generator (benchmarks.conversations); benchmarks.upkeep_run
brings a session to each size and lives a window of tasks there, in a throwaway database on the
configured engine (SQLite, or PostgreSQL from DATABASE_URL); benchmarks.upkeep_report reads the figures. Prints p50/p95 per-task upkeep
over the 100 tasks around each session size, and the largest size's over the smallest's, and
writes JSON under benchmarks/results/.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import time
from datetime import datetime, timezone

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.test.utils import override_settings

from benchmarks import scratch, upkeep_run
from benchmarks.conversations import generate_conversation
from benchmarks.metrics import write_results
from benchmarks.upkeep_report import catch_up_stats, evaluate, format_queries, format_report, slowest_queries, window
from sessions.policy import Policy

DEFAULT_SIZES = "100,10000"
QUICK_SIZES = "100,1000"
PROFILE_LINES = 30


class Command(BaseCommand):
    help = (
        "Run the upkeep benchmark: in a generated conversation, the upkeep after each task (indexing, memory "
        "extraction, folds) timed over the 100 tasks around each session size; p50/p95 and the largest size's ratio."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--sizes", default=DEFAULT_SIZES, help="session sizes in tasks, comma-separated (default: %(default)s)")
        parser.add_argument("--language", choices=("en", "zh"), default="en")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--fold-batch", type=int, default=Policy.fold_batch,
                            help="the channel's fold_batch (default: the product's, %(default)s)")
        parser.add_argument("--profile", action="store_true",
                            help="cProfile the upkeep at the largest size and print where its time goes")
        parser.add_argument("--queries", action="store_true",
                            help="time each SQL statement of the upkeep and print each size's slowest")
        parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES} (a smoke test)")
        parser.add_argument("--out", default=None, help="directory for the JSON results (default benchmarks/results/)")

    def handle(self, *args, sizes: str, language: str, seed: int, fold_batch: int, profile: bool, queries: bool, quick: bool,
               out: str | None, **options) -> None:
        try:
            size_list = sorted({int(size) for size in (QUICK_SIZES if quick else sizes).split(",") if size.strip()})
            for size in size_list:
                window(size)
        except ValueError as error:
            raise CommandError(f"--sizes: {error}") from error
        if len(size_list) < 2:
            raise CommandError("--sizes: give at least two sizes to compare.")
        started = time.perf_counter()
        conversation = generate_conversation(window(size_list[-1])[1], language=language, seed=seed)
        profiler = cProfile.Profile() if profile else None
        query_times: dict | None = {} if queries else None
        # As in production: DEBUG's query log (on by default here) costs every query time.
        with override_settings(DEBUG=False), scratch.throwaway_database("bench-upkeep-") as database:
            self.stderr.write(f"{database}: a {conversation.n_tasks:,}-task conversation ({language}), sizes {size_list}")
            rows_by_size, folds = upkeep_run.measure(
                conversation, size_list, fold_batch=fold_batch, progress=self.stderr.write, profile=profiler,
                query_times=query_times,
            )
        elapsed = time.perf_counter() - started
        result = {
            "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "database": database,
            "language": language,
            "seed": seed,
            "fold_batch": fold_batch,
            "seconds": round(elapsed, 1),
            "evaluation": evaluate(rows_by_size),
            # Timed one after the other, not in turns: a machine busier at one end than the other shows here.
            "catch_up": catch_up_stats(folds, window(size_list[-1])[0] - 1),
            "catch_up_folds": folds,
            "slowest_queries": {size: slowest_queries(times) for size, times in (query_times or {}).items()},
            "rows": {str(size): rows for size, rows in rows_by_size.items()},
        }
        self.stdout.write(format_report(result))
        if query_times:
            self.stdout.write(format_queries(result["slowest_queries"]))
        if profiler:
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(PROFILE_LINES)
            self.stdout.write(f"\nWhere the upkeep at {size_list[-1]:,} tasks went (cProfile, cumulative):\n{text.getvalue()}")
        path = write_results(result, out, settings.BASE_DIR, f"bench_upkeep-{database}")
        self.stdout.write(f"\nResults: {path} ({elapsed:.0f} s)")
