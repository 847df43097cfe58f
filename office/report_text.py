"""A prompt report in plain words: the sentence on top of the report dialog, what its summary layer
held, how its characters add up, and the model and cost of the task.

Pure (no ORM, no I/O): every word comes from the stored report (sessions.context) and the task's usage, the same
values the context bar is drawn from, so the text and the bar cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coworkers.providers import ANSWERED_WITHOUT_A_MODEL as NO_MODEL
from sessions import cache_lifetime


def describe(report: Mapping[str, Any] | None, *, who: str, usage: Mapping[str, Any]) -> dict:
    """The plain-words part of the report endpoint's answer (its key "overview")."""
    offline = usage.get("provider") in NO_MODEL
    words = {
        "model": usage.get("provider") if offline else (usage.get("model") or "—"),
        "cost": "$0" if offline else _cost(usage.get("cost_usd")),
        "offline": offline,
        "sentence": "",
        "total": "",
        "summary": [],
        "cache_lifetime": "" if offline else cache_kept(usage),
        "cache": "" if offline else cache_lifetime.describe((report or {}).get("cache")),
    }
    if report:
        words |= {
            "sentence": sentence(report, who=who),
            "total": total(report, who=who),
            "summary": summary_parts(report),
            "memory_elsewhere": memory_elsewhere(report),
            "kept_recall": kept_recall(report),
            "input_tokens": input_tokens_line(report, who=who, usage=usage),
        }
    return words


def cache_kept(usage: Mapping[str, Any]) -> str:
    """How long the task's model calls had their prompts cached: "1 hour", "5 minutes" ("" with no call)."""
    words = [cache_lifetime.WORDS[ttl] for ttl in cache_lifetime.LIFETIMES if ttl in (usage.get("cache_ttl") or ())]
    return " and ".join(words)


def memory_elsewhere(report: Mapping[str, Any]) -> str:
    """The remembered facts the memory part did not hold but the prompt showed, for the legend's Memory row:
    "1 fact, shown with an earlier task". Their characters are counted in Recalled, where they sit."""
    layers = report.get("layers") or {}
    recalled = layers.get("recalled") or {}
    in_memory = set((layers.get("memory") or {}).get("items") or ())
    here = [i for i in dict.fromkeys(recalled.get("memory_items") or ()) if i not in in_memory]
    kept = [i for i in dict.fromkeys(recalled.get("kept_memory_items") or ()) if i not in in_memory and i not in here]
    places = [(len(kept), "with an earlier task"), (len(here), "with your message")]
    places = [(n, where) for n, where in places if n]
    if not places:
        return ""
    if len(places) == 1:
        (n, where), = places
        return f"{_count(n, 'fact')}, shown {where}"
    return f"{_count(len(kept) + len(here), 'fact')}: " + " and ".join(f"{n} shown {where}" for n, where in places)


def kept_recall(report: Mapping[str, Any]) -> str:
    """Earlier tasks still shown after what was recalled for them when they were asked ("" when none)."""
    turns = list(((report.get("layers") or {}).get("recent") or {}).get("kept_tails") or ())
    if not turns:
        return ""
    each = "still" if len(turns) == 1 else "each still"
    return f"{_tasks(turns).capitalize()}, {each} with what was recalled for it when you asked it"


def input_tokens_line(report: Mapping[str, Any], *, who: str, usage: Mapping[str, Any]) -> str:
    """Why "Input tokens" is more than the bar's figure: they count different things, said plainly."""
    shown, sent = report.get("estimated_tokens"), usage.get("input_tokens")
    if not isinstance(shown, int) or not sent:
        return ""
    calls = int(usage.get("calls") or 1)
    # Offline no model was called: the offline coworker read the same prompts.
    offline = usage.get("provider") in NO_MODEL
    each = "" if calls == 1 else f", in each of the task's {calls} {'prompts' if offline else 'model calls'}"
    return (
        f"The bar counts the prompt's text: about {shown:,} tokens. "
        f"{'What the offline coworker was given' if offline else 'What the model was sent'} (input tokens, with "
        f"those written to and read from the cache) also holds that text's framing and the descriptions of the "
        f"tools {who} can use{each}."
    )


def sentence(report: Mapping[str, Any], *, who: str) -> str:
    """"Mina saw your last 2 tasks in full, 1 remembered fact and the summary of tasks 1–12."

    One part for each layer of the bar that has anything in it, in the bar's order."""
    layers = report.get("layers") or {}
    summary, recalled = layers.get("summary") or {}, layers.get("recalled") or {}
    parts: list[str] = []
    if detailed := list(report.get("detailed_tasks") or (layers.get("recent") or {}).get("tasks") or ()):
        parts.append("your last task in full" if len(detailed) == 1 else f"your last {len(detailed)} tasks in full")
    if digested := list(report.get("digested_tasks") or ()):
        parts.append(f"short notes on {_tasks(digested)}")
    if facts := len(memory_ids(report)):
        parts.append(_count(facts, "remembered fact"))
    if through := int(report.get("summarized_through") or 0):
        parts.append(f"the summary of {_tasks(range(1, through + 1))}")
    if carried_note(report):
        parts.append("a note carried over from your previous conversation")
    # Found for this message, and still shown from what was found for earlier tasks: the report's
    # body lists the two apart ("Found for your message", "Recalled earlier, still shown").
    found, kept = len(recalled.get("exchanges") or ()), int(recalled.get("kept_exchanges") or 0)
    if found:
        parts.append(f"{_count(found, 'earlier exchange')} recalled for what you asked")
    if kept:
        parts.append(f"{_count(kept, 'exchange' if found else 'earlier exchange')} recalled for earlier tasks")
    if not parts:
        return f"{who} saw only your message: there was nothing earlier to show."
    return f"{who} saw {_join(parts)}."


def total(report: Mapping[str, Any], *, who: str) -> str:
    """How the characters add up, from the same numbers the bar is drawn with."""
    layers = report.get("layers") or {}
    chars = {name: int((layers.get(name) or {}).get("chars") or 0) for name in layers}
    everything = int(report.get("total_chars") or sum(chars.values()))
    instructions, current = chars.get("system", 0), chars.get("current", 0)
    tokens = report.get("estimated_tokens")
    about = f", about {tokens:,} tokens" if isinstance(tokens, int) else ""
    text = (
        f"In all {everything:,} characters{about}. {who}'s instructions took {instructions:,} and this task "
        f"{current:,}; memory, the summary, recent tasks and recall took the other {everything - instructions - current:,}"
    )
    shared = (report.get("budget") or {}).get("total")
    return text + (f", of the {shared:,} characters they share." if isinstance(shared, int) else ".")


def summary_parts(report: Mapping[str, Any]) -> list[str]:
    """What the summary layer held, one line each; empty when the layer was."""
    layers = report.get("layers") or {}
    if not int((layers.get("summary") or {}).get("chars") or 0):
        earlier = report.get("detailed_tasks") or (layers.get("recent") or {}).get("tasks")
        return ["No summary: every earlier task was shown in full." if earlier else "No summary: there was nothing earlier."]
    parts = []
    if through := int(report.get("summarized_through") or 0):
        parts.append(f"The summary of {_tasks(range(1, through + 1))}, below.")
    if digested := list(report.get("digested_tasks") or ()):
        parts.append(f"Short notes on {_tasks(digested)}: their summary was not written yet.")
    if carried_note(report):
        parts.append("A note carried over from your previous conversation, below.")
    return parts


def carried_note(report: Mapping[str, Any]) -> bool:
    """Whether the summary layer held the note a new conversation carries."""
    summary = (report.get("layers") or {}).get("summary") or {}
    if "carried_note" in summary:
        return bool(summary["carried_note"])
    # Reports stored before they said so: a summary layer with neither a summary nor notes held only the note.
    return bool(summary.get("chars")) and not report.get("summarized_through") and not report.get("digested_tasks")


def memory_ids(report: Mapping[str, Any]) -> list[int]:
    """Every memory item the prompt showed: in the memory layer, new since the summary with this task,
    and in the tails still in front of earlier tasks."""
    layers = report.get("layers") or {}
    recalled = layers.get("recalled") or {}
    ids = [
        *((layers.get("memory") or {}).get("items") or ()),
        *(recalled.get("memory_items") or ()),
        *(recalled.get("kept_memory_items") or ()),
    ]
    return list(dict.fromkeys(i for i in ids if isinstance(i, int)))


def folds_line(folds: Sequence[Mapping[str, Any]]) -> str:
    """Who wrote the summary: "Written by offline." or, when folds differ, each fold's tasks and model."""
    models = {fold["model"] or "an unnamed model" for fold in folds}
    if len(models) == 1:
        return f"Written by {models.pop()}."
    each = "; ".join(f"{_tasks(range(f['from_turn'], f['through_turn'] + 1))} by {f['model'] or 'an unnamed model'}" for f in folds)
    return f"Written in {len(folds)} steps: {each}."


def _tasks(turns) -> str:
    turns = sorted(turns)
    if len(turns) == 1:
        return f"task {turns[0]}"
    if turns == list(range(turns[0], turns[-1] + 1)):
        return f"tasks {turns[0]}–{turns[-1]}"
    return "tasks " + _join([str(t) for t in turns])


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}{'' if n == 1 else 's'}"


def _join(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _cost(value: Any) -> str:
    if value is None:
        return "—"  # the model is not in MODEL_PRICES: unknown is not free
    amount = float(value)
    return "$0" if amount == 0 else f"${amount:.4f}"
