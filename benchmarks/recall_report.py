"""Scoring bench_recall: whether a prompt holds a question's evidence verbatim, the baselines, the targets, the table.

Pure: no Django, no ORM. The builder's prompts come in as built (sessions.context.Prompt,
read only through `system`, `messages`, `window_end` and `report`); the baselines
are computed here from the conversation alone.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks import metrics
from benchmarks.recall_conversations import KINDS, Question, RecallConversation
from sessions.history import Record, group_tasks

FULL = "full history"
LAST = "last 8 tasks"
BM25 = "bm25 (equal size)"
BUILDER = "builder"
LAST_TASKS = 8
LAYOUTS = ("one session", "sessions")
# Where a builder's evidence message was found, in the order a prompt is read.
LOCATIONS = ("memory", "summary", "system", "recent", "recalled", "missing")
MEMORY_HEADER = "# Long-term memory"
SUMMARY_HEADER = "# Earlier in this conversation"
# Relevance target: how many points more questions the builder must answer than equal-size BM25.
MARGIN_POINTS = 10.0
SIZE_SHARE = 0.20  # mean prompt at most this share of the full history's characters, at 300 tasks
SEARCH_GROWTH = 1.5  # recall search p95 at the largest size within this multiple of the smallest


# Evidence ---------------------------------------------------------------------


def normalize(text: str) -> str:
    """Whitespace runs become one space, so a message re-wrapped by a layer still counts as verbatim."""
    return re.sub(r"\s+", " ", text).strip()


def evidence_texts(conversation: RecallConversation, question: Question) -> list[str]:
    return [normalize(conversation.record(record_id).content) for record_id in question.evidence]


def locate(evidence: Sequence[str], parts: Mapping[str, str]) -> list[str]:
    """For each evidence text, the first part (in LOCATIONS order) holding it whole, else "missing".

    `parts` are already normalized texts named by LOCATIONS; a message must be there in
    full: a recalled line that keeps only the sentences it thinks matter is a miss,
    because the model then answers from less than what was said.
    """
    found = []
    for text in evidence:
        found.append(next((name for name in LOCATIONS[:-1] if text and text in parts.get(name, "")), "missing"))
    return found


def message_text(message: Any) -> str:
    """A prompt message's text: its content (a string or content blocks) and its tool calls' args as JSON."""
    content = message.content
    if isinstance(content, list):
        content = " ".join(block.get("text", "") if isinstance(block, dict) else str(block) for block in content)
    calls = getattr(message, "tool_calls", None) or ()
    return " ".join([str(content), *(json.dumps(call.get("args", {}), ensure_ascii=False) for call in calls)])


def prompt_parts(prompt: Any) -> dict[str, str]:
    """A built prompt split where its layers are: memory, summary, other system blocks, the recent
    window, and the rest (recalled tail and current task), each normalized."""
    parts = {name: [] for name in LOCATIONS[:-1]}
    for block in prompt.system:
        text = block if isinstance(block, str) else message_text(block)
        name = "memory" if text.startswith(MEMORY_HEADER) else "summary" if text.startswith(SUMMARY_HEADER) else "system"
        parts[name].append(text)
    end = prompt.window_end + 1
    parts["recent"] = [message_text(m) for m in prompt.messages[:end]]
    parts["recalled"] = [message_text(m) for m in prompt.messages[end:]]
    return {name: normalize(" ".join(texts)) for name, texts in parts.items()}


def score(evidence: Sequence[str], parts: Mapping[str, str], answer: str = "") -> dict:
    """A question's result in one prompt: all evidence there (hit), where each message was, and
    (for reading the figures, not a target) whether the answer's words are anywhere in it."""
    where = locate(evidence, parts)
    answer = normalize(answer)
    return {"hit": "missing" not in where, "where": where, "answer": bool(answer) and any(answer in p for p in parts.values())}


# Baselines --------------------------------------------------------------------


def task_documents(records: Sequence[Record]) -> list[str]:
    """Each task as one document: the user's message and the coworker's reply text (no tool traffic)."""
    documents = []
    for task in group_tasks(list(records)):
        said = [r.content for r in task.records if r.role in ("user", "assistant") and r.content.strip()]
        documents.append("\n".join(said))
    return documents


def full_history_text(records: Sequence[Record]) -> str:
    return "\n".join(record.content for record in records)


def last_tasks_text(records: Sequence[Record], n: int = LAST_TASKS) -> str:
    tasks = group_tasks(list(records))[-n:]
    return "\n".join(record.content for task in tasks for record in task.records)


class Tokenizer:
    """English: words, stop words dropped, Snowball-stemmed (PyStemmer). Chinese: jieba's words."""

    def __init__(self, language: str) -> None:
        self.language = language
        if language == "zh":
            import jieba

            jieba.setLogLevel(60)  # its "building prefix dict" lines are not the benchmark's output
            self._cut = jieba.lcut
        else:
            import Stemmer
            from bm25s.stopwords import STOPWORDS_EN

            self._stem = Stemmer.Stemmer("english").stemWords
            self._stop = set(STOPWORDS_EN)

    def __call__(self, text: str) -> list[str]:
        if self.language == "zh":
            return [w.lower() for w in self._cut(text) if re.search(r"\w", w)]
        words = [w for w in re.findall(r"[a-z0-9$,]+(?:'[a-z]+)?", text.lower()) if w not in self._stop]
        return self._stem([w.strip(",") for w in words if w.strip(",")])


class Bm25Baseline:
    """BM25 (bm25s) over whole tasks; a prompt takes the best tasks until the next would not fit."""

    def __init__(self, records: Sequence[Record], language: str) -> None:
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs each index built at DEBUG

        self.documents = task_documents(records)
        self.tokenize = Tokenizer(language)
        self.index = bm25s.BM25()
        self.index.index([self.tokenize(d) or [""] for d in self.documents], show_progress=False)
        self.vocabulary = set(self.index.vocab_dict)

    def ranking(self, question: str) -> list[int]:
        """Task indexes, best first; ties go to the newer task (what a person would look at first)."""
        terms = [t for t in self.tokenize(question) if t in self.vocabulary]
        if not terms:
            return list(range(len(self.documents) - 1, -1, -1))
        scores = self.index.get_scores(terms)
        return sorted(range(len(self.documents)), key=lambda i: (-float(scores[i]), -i))

    def prompt(self, question: str, budget_chars: int) -> str:
        """The question, then tasks best first while the whole stays within budget_chars (equal size)."""
        chosen, used = [], len(question)
        for i in self.ranking(question):
            size = len(self.documents[i]) + 1
            if used + size > budget_chars:
                break
            chosen.append(self.documents[i])
            used += size
        return "\n".join([*chosen, question])


# Running ----------------------------------------------------------------------


def question_row(question: Question, result: dict, chars: int, budgeted: int | None = None) -> dict:
    """`chars` is the whole prompt; `budgeted` (the builder's) what the layer budgets cover: all but
    the system prompt and the current instruction, which no budget bounds."""
    return {"key": question.key, "kind": question.kind, "hit": result["hit"], "where": result["where"],
            "answer": result.get("answer", False), "chars": chars, "budgeted": chars if budgeted is None else budgeted}


def summarize(rows: Sequence[dict], history_chars: int, budget: int | None = None) -> dict:
    """Hit rates overall and per question type, sizes, and where the evidence was."""
    by_kind = {kind: [r for r in rows if r["kind"] == kind] for kind in KINDS}
    chars = [r["chars"] for r in rows]
    where: dict[str, int] = {name: 0 for name in LOCATIONS}
    for row in rows:
        for name in row["where"]:
            where[name] += 1
    return {
        "questions": len(rows),
        "hit": _rate(rows),
        "by_kind": {kind: _rate(found) for kind, found in by_kind.items()},
        "answer": 100.0 * sum(r["answer"] for r in rows) / len(rows) if rows else None,
        "mean_chars": sum(chars) / len(chars) if chars else 0.0,
        "max_chars": max(chars, default=0),
        "max_budgeted": max((r["budgeted"] for r in rows), default=0),
        "share_of_full": (sum(chars) / len(chars)) / history_chars if chars and history_chars else None,
        "budget": budget,
        "where": where,
        "rows": list(rows),
    }


def _rate(rows: Sequence[dict]) -> float | None:
    return 100.0 * sum(r["hit"] for r in rows) / len(rows) if rows else None


def baseline_rows(
    conversation: RecallConversation, records: Sequence[Record], builder_chars: Mapping[str, int]
) -> dict[str, list[dict]]:
    """The three baselines' rows for every question; BM25 gets the builder's size for that question."""
    full = normalize(full_history_text(records))
    last = normalize(last_tasks_text(records))
    bm25 = Bm25Baseline(records, conversation.language)
    rows: dict[str, list[dict]] = {FULL: [], LAST: [], BM25: []}
    for question in conversation.questions:
        evidence = evidence_texts(conversation, question)
        q = normalize(question.text)
        for name, text in ((FULL, f"{full} {q}"), (LAST, f"{last} {q}")):
            rows[name].append(question_row(question, score(evidence, {"recent": text}, question.answer), len(text)))
        text = bm25.prompt(question.text, builder_chars[question.key])
        rows[BM25].append(question_row(question, score(evidence, {"recalled": normalize(text)}, question.answer), len(text)))
    return rows


# Targets ----------------------------------------------------------------------


def evaluate_targets(runs: Sequence[dict], search: Mapping[str, Any] | None) -> list[dict]:
    """The issue's three targets, each PASS, FAIL or N/A with the figures behind it."""
    results = []

    def target(key: str, title: str, status: str, detail: str) -> None:
        results.append({"key": key, "title": title, "status": status, "detail": detail})

    parts, ok = [], True
    for run in runs:
        builder, bm25 = run["strategies"][BUILDER], run["strategies"][BM25]
        gaps = {"all": _gap(builder["hit"], bm25["hit"])}
        gaps |= {kind: _gap(builder["by_kind"][kind], bm25["by_kind"][kind]) for kind in KINDS if builder["by_kind"][kind] is not None}
        worst = min(gaps, key=lambda k: gaps[k])
        ok &= gaps[worst] >= MARGIN_POINTS
        parts.append(f"{run['language']}/{run['layout']}: {gaps['all']:+.0f} pts overall, worst {worst} {gaps[worst]:+.0f}")
    target("relevance", f"all evidence in the prompt for ≥{MARGIN_POINTS:.0f} points more questions than equal-size BM25, "
           "overall and per type, each language", "PASS" if ok and runs else "FAIL", "; ".join(parts))

    parts, ok, measured = [], True, False
    for run in runs:
        builder = run["strategies"][BUILDER]
        share, over = builder["share_of_full"], builder["max_budgeted"] > builder["budget"]
        at_300 = run["tasks"] >= 300
        measured |= at_300
        ok &= not over and (share <= SIZE_SHARE or not at_300)
        parts.append(f"{run['language']}/{run['layout']}: mean {share:.1%} of {run['history_chars']:,}, "
                     f"max {builder['max_budgeted']:,} budgeted (of {builder['max_chars']:,} in all) vs budgets {builder['budget']:,}")
    status = ("PASS" if ok else "FAIL") if measured else ("FAIL" if not ok else "N/A")
    note = "" if measured else " (share not judged: fewer than 300 tasks)"
    target("size", f"mean prompt ≤{SIZE_SHARE:.0%} of the full history at 300 tasks; never above the sum of layer budgets",
           status, "; ".join(parts) + note)

    if not search or len(search.get("sizes", {})) < 2:
        target("search", f"recall search p95 at 10,000 tasks within {SEARCH_GROWTH}× of 100", "N/A",
               "not measured (--quick, or one search size)")
    else:
        sizes = sorted(search["sizes"], key=int)
        small, large = search["sizes"][sizes[0]]["p95_ms"], search["sizes"][sizes[-1]]["p95_ms"]
        ratio = large / small if small else float("inf")
        status = "PASS" if ratio <= SEARCH_GROWTH and int(sizes[-1]) >= 10_000 else "FAIL" if ratio > SEARCH_GROWTH else "N/A"
        target("search", f"recall search p95 at 10,000 tasks within {SEARCH_GROWTH}× of 100", status,
               f"{search['language']}: p95 {small:.2f} ms at {int(sizes[0]):,} tasks, {large:.2f} ms at {int(sizes[-1]):,} ({ratio:.2f}×)")
    return results


def _gap(builder: float | None, baseline: float | None) -> float:
    return (builder or 0.0) - (baseline or 0.0)


# Table ------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def format_runs(runs: Sequence[dict]) -> str:
    header = ["language", "layout", "strategy", "qs", "all", *KINDS, "answer", "mean chars", "% full", "max budgeted / budgets", "builder evidence m/s/y/r/recalled/x"]
    lines = []
    for run in runs:
        for name, s in run["strategies"].items():
            where = "/".join(str(s["where"][n]) for n in LOCATIONS) if name == BUILDER else ""
            budget = f"{s['max_budgeted']:,} / {s['budget']:,}" if s.get("budget") else f"{s['max_chars']:,}"
            lines.append([run["language"], run["layout"], name, str(s["questions"]), _pct(s["hit"]),
                          *(_pct(s["by_kind"][k]) for k in KINDS), _pct(s["answer"]), f"{s['mean_chars']:,.0f}",
                          f"{s['share_of_full']:.1%}", budget, where])
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]
    render = lambda row: "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()  # noqa: E731
    return "\n".join([render(header), "-" * len(render(header)), *map(render, lines)])


def format_targets(targets: Iterable[dict]) -> str:
    lines = ["\nTargets"]
    for t in targets:
        lines.append(f"  {t['status']:<4}  {t['title']}")
        lines.append(f"        {t['detail']}")
    return "\n".join(lines)


def write_results(result: dict, out: str | None, base_dir: Path) -> Path:
    return metrics.write_results(result, out, base_dir, "bench_recall")
