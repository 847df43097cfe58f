"""bench_recall: whether each prompt holds the old details a question needs, beside the full history, the last tasks and BM25.

The generator and the scoring are pure (benchmarks.recall_conversations, benchmarks.recall_report);
benchmarks.recall_builder runs the app's builder in a throwaway SQLite database. Prints a
table and the targets, and writes JSON under benchmarks/results/.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.test.utils import override_settings

from benchmarks import recall_builder
from benchmarks.recall_dataset import DatasetError, load_dataset
from benchmarks.recall_conversations import MIN_TASKS, generate_recall_conversation
from benchmarks.recall_report import (
    BM25,
    BUILDER,
    FULL,
    LAST,
    LAYOUTS,
    baseline_rows,
    evaluate_targets,
    evidence_texts,
    format_runs,
    format_targets,
    full_history_text,
    prompt_parts,
    question_row,
    score,
    summarize,
    write_results,
)

QUICK_TASKS = 120
LAYER_NAMES = ("system", "memory", "summary", "recent", "recalled", "current")


class Command(BaseCommand):
    help = (
        "Run the relevance benchmark: generated conversations over several days (English and Chinese) with "
        "questions about old details; for each, whether all its evidence is verbatim in the builder's prompt, "
        "beside the full history, the last 8 tasks and equal-size BM25."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--tasks", type=int, default=300, help="tasks per conversation (default: %(default)s)")
        parser.add_argument("--language", choices=("en", "zh", "both"), default="both")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--search-sizes", default="100,10000",
                            help="session sizes at which recall's search is timed, comma-separated; empty for none")
        parser.add_argument("--layouts", default=",".join(LAYOUTS),
                            help="which import layouts to run, comma-separated (default: all: %(default)s)")
        parser.add_argument("--quick", action="store_true",
                            help=f"{QUICK_TASKS} tasks and no search timing beyond 100 tasks (a smoke test)")
        parser.add_argument("--dataset", default=None, metavar="FILE",
                            help="a LoCoMo-format JSON file of conversations written by people, instead of the generated ones")
        parser.add_argument("--limit", type=int, default=None, help="with --dataset: only its first N conversations")
        parser.add_argument("--out", default=None, help="directory for the JSON results (default benchmarks/results/)")

    def handle(self, *args, tasks: int, language: str, seed: int, search_sizes: str, layouts: str, quick: bool,
               dataset: str | None, limit: int | None, out: str | None, **options) -> None:
        if limit is not None and (not dataset or limit < 1):
            raise CommandError("--limit takes a number of conversations, at least 1, and goes with --dataset.")
        if dataset:
            search_sizes = ""  # the search is timed on generated sessions of chosen sizes, not on a dataset
        if quick:
            tasks, search_sizes = QUICK_TASKS, ",".join(s for s in search_sizes.split(",") if s.strip() and int(s) < 10_000)
        elif tasks < 300:
            raise CommandError("--tasks must be at least 300 (use --quick for a small run).")
        sizes = _parse_sizes(search_sizes)
        chosen = [name.strip() for name in layouts.split(",") if name.strip()]
        if unknown := [name for name in chosen if name not in LAYOUTS]:
            raise CommandError(f"unknown layout {unknown[0]!r}; choose from: {', '.join(LAYOUTS)}")
        languages = ["en", "zh"] if language == "both" else [language]
        conversations = None
        if dataset:
            try:
                conversations = load_dataset(dataset, limit=limit)
            except DatasetError as error:
                raise CommandError(str(error)) from error
            languages = ["en"]  # LoCoMo is in English
        started = time.perf_counter()
        runs, search = [], None
        # As in production: DEBUG's query log (on by default here) costs every query time.
        with override_settings(DEBUG=False), recall_builder.throwaway_database():
            if conversations:
                runs = [self._run_dataset(conversations, layout) for layout in chosen]
            else:
                for lang in languages:
                    conversation = generate_recall_conversation(tasks, language=lang, seed=seed)
                    self._progress(f"{lang}: {conversation.n_tasks} tasks over {len(conversation.days)} days, "
                                   f"{len(conversation.questions)} questions")
                    for layout in chosen:
                        runs.append(self._run(conversation, layout))
            if sizes:
                search = self._search(languages[0], seed, sizes)

        self.stdout.write(format_runs(runs))
        self.stdout.write("\nbuilder mean chars per layer: " + "; ".join(
            f"{r['language']}/{r['layout']}: " + ", ".join(f"{k} {v:,.0f}" for k, v in r["layer_chars"].items())
            for r in runs))
        if search:
            self.stdout.write("recall search: " + ", ".join(
                f"{int(n):,} tasks p50 {s['p50_ms']:.2f} ms p95 {s['p95_ms']:.2f} ms" for n, s in search["sizes"].items()))
        targets = evaluate_targets(runs, search)
        self.stdout.write(format_targets(targets))
        elapsed = time.perf_counter() - started
        result = {
            "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "seed": seed,
            "dataset": dataset,
            "tasks": tasks,
            "languages": languages,
            "seconds": round(elapsed, 1),
            "runs": runs,
            "search": search,
            "targets": targets,
        }
        path = write_results(result, out, settings.BASE_DIR)
        self.stdout.write(f"\nResults: {path} ({elapsed:.0f} s)")

    def _progress(self, line: str) -> None:
        self.stderr.write(line)
        self.stderr.flush()

    def _run(self, conversation, layout: str) -> dict:
        """The builder's prompt for every question after importing the conversation in this layout, and the baselines."""
        return self._summarize(conversation.language, layout, [self._ask_all(conversation, layout)])

    def _run_dataset(self, conversations, layout: str) -> dict:
        """Every conversation of a dataset in this layout, its questions' rows pooled into one run."""
        return self._summarize("locomo", layout, [self._ask_all(c, layout) for c in conversations])

    def _ask_all(self, conversation, layout: str) -> dict:
        started = time.perf_counter()
        channel, budget = recall_builder.scratch_channel()
        session, turn = recall_builder.import_layout(conversation, layout, channel, self._progress)
        rows, sizes, layers = [], {}, {name: 0 for name in LAYER_NAMES}
        for question in conversation.questions:
            prompt = recall_builder.ask(session, turn, question)
            chars = int(prompt.report["total_chars"])
            sizes[question.key] = chars
            for name in LAYER_NAMES:
                layers[name] += int((prompt.report["layers"].get(name) or {}).get("chars", 0))
            result = score(evidence_texts(conversation, question), prompt_parts(prompt), question.answer)
            rows.append(question_row(question, result, chars, int(prompt.report["budget"]["used"])))
        baselines = baseline_rows(conversation, conversation.records, sizes)
        self._progress(f"{conversation.language}/{layout}: {len(rows)} questions done in {time.perf_counter() - started:.0f} s")
        return {"conversation": conversation, "rows": rows, "baselines": baselines, "layers": layers, "budget": budget,
                "history_chars": len(full_history_text(conversation.records))}

    def _summarize(self, language: str, layout: str, asked: list[dict]) -> dict:
        """One run's figures from the questions of one or more conversations (a dataset's are pooled)."""
        conversations = [a["conversation"] for a in asked]
        count = max(1, sum(len(c.questions) for c in conversations))
        # Pooled, the share of the full history is of the mean history a question was asked after.
        history_chars = round(sum(a["history_chars"] * len(a["conversation"].questions) for a in asked) / count)
        pooled = lambda name: [row for a in asked for row in a["baselines"][name]]  # noqa: E731
        return {
            "language": language,
            "layout": layout,
            "conversations": len(conversations),
            "tasks": round(sum(c.n_tasks for c in conversations) / len(conversations)),
            "days": round(sum(len(c.days) for c in conversations) / len(conversations)),
            "history_chars": history_chars,
            "layer_chars": {name: sum(a["layers"][name] for a in asked) / count for name in LAYER_NAMES},
            "questions": [
                {"key": q.key, "kind": q.kind, "text": q.text, "answer": q.answer, "evidence": list(q.evidence)}
                for c in conversations for q in c.questions
            ],
            "strategies": {
                BUILDER: summarize([row for a in asked for row in a["rows"]], history_chars, asked[0]["budget"]),
                FULL: summarize(pooled(FULL), history_chars),
                LAST: summarize(pooled(LAST), history_chars),
                BM25: summarize(pooled(BM25), history_chars),
            },
        }

    def _search(self, language: str, seed: int, sizes: list[int]) -> dict:
        """Recall's search timed over the questions, in one session of each size (all built first,
        then timed in alternating rounds).

        Every size is asked the same questions: those of every size's conversation. Each asked only
        its own, the sizes' percentiles compared different questions as much as different
        histories (one conversation's questions may name a common word more often than another's),
        and what the target measures is what a longer history adds to the same search."""
        result = {"language": language, "sizes": {}}
        built, conversations = [], []
        for size in sizes:
            started = time.perf_counter()
            conversation = generate_recall_conversation(size, language=language, seed=seed)
            channel, _ = recall_builder.scratch_channel()
            # Imported only: the search reads what the import indexed, not the summary or memory.
            session, turn = recall_builder.import_layout(conversation, "one session", channel, self._progress, catch_up=False)
            built.append((session, turn - 1))
            conversations.append(conversation)
            self._progress(f"search at {size:,} tasks: built in {time.perf_counter() - started:.0f} s")
        asked = list({q.text: q for c in conversations for q in c.questions}.values())
        built = [(session, through, asked) for session, through in built]
        started = time.perf_counter()
        for size, (_, _, questions), each in zip(sizes, built, recall_builder.time_search(built)):
            timings = sorted(each)
            slowest = sorted(zip(each, questions), key=lambda pair: -pair[0])[:5]
            result["sizes"][str(size)] = {
                "questions": len(timings),
                "p50_ms": _percentile(timings, 50),
                "p95_ms": _percentile(timings, 95),
                "max_ms": timings[-1],
                # Which questions are slow says where the time goes (a common term, a long answer).
                "slowest": [{"ms": ms, "question": q.text} for ms, q in slowest],
            }
        self._progress(f"search timed at every size in {time.perf_counter() - started:.0f} s")
        return result


def _parse_sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError as error:
        raise CommandError(f"--search-sizes takes whole numbers separated by commas, got {text!r}.") from error
    if any(size < MIN_TASKS for size in sizes):
        raise CommandError(f"--search-sizes: each size must be at least {MIN_TASKS} tasks.")
    return sizes


def _percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile of sorted values."""
    if not values:
        return 0.0
    rank = max(1, round(pct / 100 * len(values) + 0.4999))
    return values[min(rank, len(values)) - 1]
