"""show_prompt SESSION_ID [--instruction TEXT] [--json]: the prompt the next task would get, and its report."""

import json

from django.core.management.base import BaseCommand, CommandError
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from sessions import prompts
from sessions.models import Session, Task

PLACEHOLDER = "(the next instruction)"
ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


class Command(BaseCommand):
    help = (
        "Show the prompt the session's next task would get: each layer (system, memory, summary, "
        "recent tasks, recalled tasks, current task) with its size, and the report. --json prints one "
        "object with layers, digested_tasks, summarized_through, total_chars and messages."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("session_id", type=int)
        parser.add_argument("--instruction", default=PLACEHOLDER, help="the next instruction (it steers recall and memory)")
        parser.add_argument("--json", action="store_true", dest="as_json", help="print one JSON object")

    def handle(self, *args, session_id: int, instruction: str, as_json: bool, **options) -> None:
        session = Session.objects.select_related("channel__office", "channel__coworker").filter(pk=session_id).first()
        if session is None:
            raise CommandError(f"There is no session with id {session_id}.")
        if not instruction.strip():
            raise CommandError("--instruction needs some text.")
        last_turn = Task.objects.filter(session=session).order_by("-turn").values_list("turn", flat=True).first()
        prompt = prompts.build_for_task(session=session, instruction=instruction, turn=(last_turn or 0) + 1)
        messages = [message_to_json(m) for m in prompt.as_messages()]
        if as_json:
            self.stdout.write(_json({**prompt.report, "messages": messages}))
        else:
            self.stdout.write(render_text(prompt.report, messages))


def message_to_json(message: BaseMessage) -> dict:
    data = {"role": ROLES.get(message.type, message.type), "content": message.content}
    if isinstance(message, AIMessage) and message.tool_calls:
        data["tool_calls"] = [{"id": c["id"], "name": c["name"], "args": c["args"]} for c in message.tool_calls]
    if isinstance(message, ToolMessage):
        data["tool_call_id"] = message.tool_call_id
        if message.status == "error":
            data["is_error"] = True
    return data


def render_text(report: dict, messages: list[dict]) -> str:
    layers = report["layers"]
    lines = [f"Prompt for task {report['turn']}: {report['total_chars']:,} characters, about {report['estimated_tokens']:,} tokens", ""]
    for name, layer in layers.items():
        budget = f" of {layer['budget']:,}" if layer.get("budget") else ""
        lines.append(f"  {name:<9} {layer['chars']:>8,}{budget} characters")
    lines += [
        "",
        f"  summarized: tasks 1–{report['summarized_through']}" if report["summarized_through"] else "  summarized: none yet",
        f"  digested (waiting to be folded): {_turns(report['digested_tasks'])}",
        f"  detailed: {_turns(report['detailed_tasks'])}",
        f"  tails kept in front of their tasks: {_turns(layers['recent'].get('kept_tails', []))}",
        "",
        _budget_line(report),
    ]
    exchanges = layers["recalled"].get("exchanges", [])
    lines.append(f"  recalled exchanges ({len(exchanges)}):" if exchanges else "  recalled exchanges: none")
    for exchange in exchanges:
        where = "an earlier conversation" if exchange["earlier_session"] else "this conversation"
        when = f", {exchange['when']}" if exchange["when"] else ""
        meaning = f"; meaning {exchange['meaning']:.2f}" if exchange.get("meaning") else ""
        lines.append(f"    task {exchange['turn']} of {where}{when}: matched {', '.join(exchange['matched']) or '-'}{meaning}")
    lines += [f"  note: {note}" for note in report["notes"]]
    lines += ["", "-" * 72]
    for message in messages:
        header = f"[{message['role']}]"
        if message.get("tool_call_id"):
            header += f" result of {message['tool_call_id']}"
        lines.append(header)
        if message["content"]:
            lines.append(str(message["content"]))
        for call in message.get("tool_calls", []):
            lines.append(f"  -> {call['name']}({_json(call['args'])}) id={call['id']}")
        lines.append("")
    return "\n".join(lines)


def _budget_line(report: dict) -> str:
    """How the request's one budget was shared (the system layer and the current task are outside it)."""
    budget = report["budget"]
    shares = " + ".join(f"{name} {chars:,}" for name, chars in budget["shares"].items())
    room = report["layers"]["recalled"].get("room")
    given = f"; recall was given {room:,}" if room else ""
    return f"  budget: {budget['used']:,} of {budget['total']:,} characters = {shares}{given}"


def _turns(turns: list[int]) -> str:
    return ", ".join(map(str, turns)) if turns else "none"


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False)
