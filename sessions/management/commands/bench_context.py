"""bench_context: how big, how cacheable, how fast and how complete each strategy's prompts are, task after task.

The baselines need no database; only benchmarks.office_strategy (the app's builder,
imported lazily) touches the ORM. Prints a table per language and size, then the
targets, and writes JSON under benchmarks/results/.
"""

from __future__ import annotations

from datetime import datetime, timezone

from django.core.management.base import BaseCommand, CommandError
from django.test.utils import override_settings

from benchmarks import lifetimes
from benchmarks.conversations import generate_conversation
from benchmarks.metrics import CACHE_READ, CACHE_WRITE
from benchmarks.strategies import HermesCompactor
from benchmarks.report import (
    DEFAULT_SIZES,
    FULL,
    LEGEND,
    QUICK_SIZES,
    evaluate_targets,
    format_run,
    format_targets,
    parse_sizes,
    run_size,
    strategy_factories,
    write_results,
)


class Command(BaseCommand):
    help = (
        "Run the context benchmark: generated office conversations (English and Chinese) of N tasks, "
        "prompts built by the full history, a Hermes-style compactor and the app's builder (fold_batch 1 "
        "and 4); report size, cacheable prefix, cost (also under 5-minute and 1-hour cache lifetimes with people's "
        "pauses), build time and where planted facts are found."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="task counts, comma-separated")
        parser.add_argument("--language", choices=("en", "zh", "both"), default="both")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--out", default=None, help="directory for the JSON results (default benchmarks/results/)")
        parser.add_argument(
            "--passes", type=int, default=3,
            help="passes of the builder through each conversation; each build keeps its fastest time (default: %(default)s)",
        )
        parser.add_argument(
            "--min-seconds", type=float, default=10.0,
            help="and more passes until this long has gone by, so a short conversation is not timed inside one "
            "slow stretch of the machine (default: %(default)s)",
        )
        parser.add_argument("--quick", action="store_true", help=f"sizes {','.join(map(str, QUICK_SIZES))} only (smoke test)")

    def handle(
        self,
        *args,
        sizes: str,
        language: str,
        seed: int,
        out: str | None,
        quick: bool,
        passes: int,
        min_seconds: float,
        **options,
    ) -> None:
        if passes < 1 or min_seconds < 0:
            raise CommandError("--passes must be at least 1 and --min-seconds at least 0.")
        size_list = list(QUICK_SIZES) if quick else parse_sizes(sizes)
        languages = ["en", "zh"] if language == "both" else [language]
        factories, builder_problem = strategy_factories()
        if builder_problem:
            self.stdout.write(f"Builder strategies not available ({builder_problem}): running full_history and hermes only.")
        self.stdout.write(LEGEND)
        self.stdout.write(lifetimes.LEGEND)

        runs = []
        for lang in languages:
            for size in size_list:
                if options.get("verbosity", 1) > 1:
                    self.stderr.write(f"{lang} N={size}…")
                conversation = generate_conversation(size, language=lang, seed=seed)
                # Timed as in production: DEBUG's query log (on by default here) costs every query time.
                with override_settings(DEBUG=False):
                    run = run_size(conversation, factories, timing_passes=passes, timing_seconds=min_seconds)
                lifetimes.add_to_run(run, conversation, seed)
                runs.append(run)
                self.stdout.write(format_run(run))
                self.stdout.write(lifetimes.format_lifetimes(run, FULL))
                self.stdout.flush()

        builders = [name for name in (runs[0]["strategies"] if runs else {}) if name not in (FULL, HermesCompactor.name)]
        targets = evaluate_targets(runs, builders)
        self.stdout.write(format_targets(targets, builders, builder_problem))

        result = {
            "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "seed": seed,
            "timing_passes": passes,
            "timing_min_seconds": min_seconds,
            "sizes": size_list,
            "languages": languages,
            "builder_available": not builder_problem,
            "builder_problem": builder_problem,
            "cost_model": {
                "unit": "the base input price of one character",
                "cache_read": CACHE_READ,
                "cache_write": CACHE_WRITE,
                "rule": "the prefix shared with the previous request is read from the cache; the rest is written to it",
                "lifetimes": {
                    "cache_write_1h": lifetimes.CACHE_WRITE_1H,
                    "rule": "a task's first request finds the cache only if the pause before it is shorter than the "
                    "lifetime the previous request wrote it with; tool-loop steps always find it",
                    "typing_pauses": {"distribution": "log-normal", "median_seconds": lifetimes.TYPING_MEDIAN_SECONDS,
                                      "sigma": lifetimes.TYPING_SIGMA, "seed": seed},
                    "clock_pauses": "the generated conversation's timestamps",
                },
            },
            "runs": runs,
            "targets": targets,
        }
        written = write_results(result, out)
        self.stdout.write(f"Results: {written} (and latest.json beside it)")

