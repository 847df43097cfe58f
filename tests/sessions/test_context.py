"""The prompt builder: valid, nothing dropped, within budget, append-only between folds."""

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from sessions import context
from sessions.context import MemoryEntry, PromptInputs, RecallCandidate, build_prompt
from sessions.history import Record, TaskRecords, ToolCall, find_faults, group_tasks
from sessions.policy import Policy


def make_task(turn: int, *, tool_chars: int = 0, answer: str = "", interrupted: bool = False, prefix: str = "") -> list[Record]:
    records = [Record(id=f"{prefix}{turn}-u", previous=None, turn=turn, role="user", content=f"Instruction {turn}")]
    if tool_chars or interrupted:
        call = ToolCall(id=f"toolu_{turn}", name="read_document", args={"title": f"doc {turn}"})
        records.append(Record(id=f"{prefix}{turn}-c", previous=None, turn=turn, role="assistant", tool_calls=(call,)))
        if not interrupted:
            body = f"Results for {turn}\n" + "x" * max(tool_chars - 20, 0)
            records.append(Record(id=f"{prefix}{turn}-r", previous=None, turn=turn, role="tool", content=body, tool_call_id=call.id))
    if not interrupted:
        records.append(Record(id=f"{prefix}{turn}-a", previous=None, turn=turn, role="assistant", content=answer or f"Answer {turn}.", coworker="mina"))
    return records


def tasks_of(records: list[Record]) -> tuple[TaskRecords, ...]:
    return tuple(group_tasks(records))


class Simulation:
    """Runs a session task by task the way the app does: each build continues the last plan,
    and folds land (immediately) up to the plan's boundary."""

    def __init__(self, policy: Policy, sizes: list[int], *, fold: bool = True, memory: bool = False, instruction: str = "Next?"):
        self.policy, self.sizes, self.fold, self.memory, self.instruction = policy, sizes, fold, memory, instruction
        self.records: list[Record] = []
        self.summarized = 0
        self.plan = None
        self.tails: dict[int, context.ShownTail] = {}
        self.prompts: list[context.Prompt] = []

    def run(self) -> "Simulation":
        for turn in range(1, len(self.sizes) + 1):
            prompt = self.build(turn, self.instruction)
            self.prompts.append(prompt)
            self.plan = context.WindowPlan.from_json(prompt.report["plan"])
            self.tails[turn] = context.ShownTail.from_json(prompt.report["tail"])
            self.records += make_task(turn, tool_chars=self.sizes[turn - 1])
            if self.fold:
                self.summarized = max(self.summarized, context.batch_boundary(self.policy, completed=turn, boundary=self.plan.boundary))
        return self

    def build(self, turn: int, instruction: str = "Next?") -> context.Prompt:
        unfolded = [r for r in self.records if r.turn > self.summarized]
        return build_prompt(
            PromptInputs(
                policy=self.policy,
                system="You are Mina, the marketing lead.",
                instruction=f"{instruction} ({turn})",
                turn=turn,
                summary=f"## Topics covered\n- Tasks 1–{self.summarized}: earlier work" if self.summarized else "",
                summarized_through=self.summarized,
                tasks=tasks_of(unfolded),
                previous_plan=self.plan,
                # A fact from before the session, then one learned from each task; those since the
                # last fold ride in the tails (the first task's too).
                memory=tuple(
                    MemoryEntry(id=t, text=f"Fact {t} learned: " + "detail " * 10, kind="project", updated=t, fresh=t > self.summarized or t == 0)
                    for t in range(0, turn)
                    if self.memory
                ),
                shown_tails=self.tails,
            )
        )


def serialized(prompt: context.Prompt, *, upto_window: bool = True) -> str:
    messages = prompt.messages[: prompt.window_end + 1] if upto_window else prompt.messages
    return "\x00".join(prompt.system) + "\x01" + "\x00".join(f"{m.type}:{m.content}:{getattr(m, 'tool_calls', '')}" for m in messages)


policies = st.builds(
    Policy,
    detailed_tasks=st.integers(1, 10),
    detailed_chars=st.integers(1_000, 12_000),
    fold_batch=st.integers(1, 5),
    summary_chars=st.integers(200, 6_000),
    memory_chars=st.integers(300, 4_000),
    tool_digest_chars=st.integers(40, 400),
)


@settings(max_examples=60)
@given(
    policy=policies,
    sizes=st.lists(st.sampled_from([0, 0, 200, 1_500, 6_000, 30_000]), max_size=30),
    fold=st.booleans(),
    memory=st.booleans(),
)
def test_every_prompt_is_valid_accounts_for_every_task_and_keeps_its_budgets(policy, sizes, fold, memory):
    if policy.fold_batch > policy.detailed_tasks:
        policy = replace(policy, fold_batch=policy.detailed_tasks)
    # "detail" is in every memory item: the ones layer 2 has no room for bear on the instruction.
    sim = Simulation(policy, sizes, fold=fold, memory=memory, instruction="Next detail?").run()

    for turn, prompt in enumerate(sim.prompts, start=1):
        report = prompt.report
        assert find_faults(prompt.as_messages()) == []
        assert report["budget"]["used"] <= report["budget"]["total"]
        memory_lines = [line for text in (*prompt.system, *(m.content for m in prompt.messages)) for line in str(text).splitlines()
                        if line.startswith("- [project] Fact")]
        assert len(memory_lines) == len(set(memory_lines)), "no memory item is shown twice"
        summarized = list(range(1, report["summarized_through"] + 1))
        accounted = summarized + report["digested_tasks"] + report["detailed_tasks"]
        assert sorted(accounted) == list(range(1, turn)), "every earlier task exactly once"
        recent = report["layers"]["recent"]
        alone_too_big = any("alone is larger" in note for note in report["notes"])
        assert recent["chars"] <= policy.detailed_chars or alone_too_big
        if alone_too_big:
            assert len(report["detailed_tasks"]) == 1
        assert len(report["detailed_tasks"]) <= policy.detailed_tasks + policy.fold_batch - 1

    # Append-only between folds: unless tasks left the window or a summary landed, the
    # prompt begins with the whole previous prompt's front and window, and no task
    # already in it changes how it is rendered.
    for previous, current in zip(sim.prompts, sim.prompts[1:]):
        if not _folded_between(previous, current):
            assert serialized(current).startswith(serialized(previous))
            before, after = previous.report["plan"]["levels"], current.report["plan"]["levels"]
            assert all(after[turn] == level for turn, level in before.items())


def _folded_between(previous: context.Prompt, current: context.Prompt) -> bool:
    return any(previous.report[key] != current.report[key] for key in ("summarized_through", "fold_through"))


def test_it_keeps_the_last_tasks_in_full_while_they_fit():
    sim = Simulation(Policy(detailed_chars=20_000), [500] * 5).run()
    prompt = sim.prompts[-1]

    assert prompt.report["detailed_tasks"] == [1, 2, 3, 4]
    assert set(prompt.report["plan"]["levels"].values()) == {"full"}
    tool_results = [m for m in prompt.messages if isinstance(m, ToolMessage)]
    assert all("x" * 400 in m.content for m in tool_results)


def test_over_budget_a_fold_digests_the_oldest_tool_results_first():
    sim = Simulation(Policy(detailed_chars=8_000, detailed_tasks=4, fold_batch=2), [3_000] * 12).run()
    at_fold = [p for previous, p in zip(sim.prompts, sim.prompts[1:]) if _folded_between(previous, p)][-1]
    levels = at_fold.report["plan"]["levels"]
    order = [levels[str(turn)] for turn in at_fold.report["detailed_tasks"]]

    assert at_fold.report["layers"]["recent"]["chars"] <= 8_000
    assert order[0] == "tools_digested" and order[-1] == "full", "the oldest lose their tool results, the newest keeps them"
    assert order == sorted(order, key=context.LEVELS.index, reverse=True), "never an older task fuller than a newer one"
    digested = [m for m in at_fold.messages if isinstance(m, ToolMessage) and "digested" in m.content]
    assert digested and all(m.content.startswith("Results for") for m in digested)


def test_a_very_long_message_keeps_its_head_and_tail():
    text = "Opening line. " + "filler " * 3_000 + "Closing line."
    short = context.shorten(text, 1_200)

    assert short.startswith("Opening line.") and short.endswith("Closing line.")
    assert "characters omitted" in short and len(short) <= 1_200 + 40


def test_when_digests_are_not_enough_the_oldest_tasks_fold_early():
    policy = Policy(detailed_chars=1_000, tool_digest_chars=100)
    sim = Simulation(policy, [0] * 3, fold=False)
    sim.records = make_task(1, answer="A" * 900) + make_task(2, answer="B" * 900) + make_task(3, answer="C" * 300)
    prompt = sim.build(4)

    assert prompt.report["detailed_tasks"] == [3]
    assert prompt.report["digested_tasks"] == [1, 2]
    assert any("folded early" in note for note in prompt.report["notes"])
    summary_block = prompt.system[-1]
    assert "Task 1 (mina): Instruction 1" in summary_block and "Task 2 (mina)" in summary_block


def test_tasks_leave_the_window_in_batches():
    policy = Policy(detailed_tasks=8, fold_batch=4)
    sim = Simulation(policy, [100] * 17).run()
    window_sizes = [len(p.report["detailed_tasks"]) for p in sim.prompts]

    # Prompt n sees n-1 earlier tasks: the window grows to 11, then drops back to 8.
    assert window_sizes == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 8, 9, 10, 11, 8]
    assert [p.report["summarized_through"] for p in sim.prompts][11:17] == [0, 4, 4, 4, 4, 8]


def test_fold_batch_one_is_a_strict_sliding_window():
    sim = Simulation(Policy(detailed_tasks=8, fold_batch=1), [100] * 14).run()
    assert [p.report["detailed_tasks"] for p in sim.prompts][-3:] == [
        [4, 5, 6, 7, 8, 9, 10, 11],
        [5, 6, 7, 8, 9, 10, 11, 12],
        [6, 7, 8, 9, 10, 11, 12, 13],
    ]


def test_each_prompt_begins_with_the_whole_previous_prompt_between_folds():
    sim = Simulation(Policy(detailed_tasks=8, fold_batch=4), [400] * 16).run()

    for previous, current in zip(sim.prompts, sim.prompts[1:]):
        folded = current.report["summarized_through"] != previous.report["summarized_through"]
        if not folded:
            assert serialized(current).startswith(serialized(previous))


def test_after_a_fold_the_plan_leaves_room_so_later_tasks_just_append():
    sim = Simulation(Policy(detailed_chars=20_000, detailed_tasks=8, fold_batch=4), [2_500] * 24).run()

    appended = 0
    for previous, current in zip(sim.prompts[12:], sim.prompts[13:]):
        if current.report["summarized_through"] == previous.report["summarized_through"]:
            assert serialized(current).startswith(serialized(previous))
            appended += 1
    assert appended == 9  # three epochs after the first fold: every request between folds appends
    assert all(p.report["layers"]["recent"]["chars"] <= 20_000 for p in sim.prompts)


def test_between_folds_a_task_already_in_the_prompt_is_never_digested_again():
    # Task 14 is far larger than the room the fold left: it is the one that gives way.
    sizes = [2_500] * 13 + [9_000, 2_500]
    sim = Simulation(Policy(detailed_chars=20_000, detailed_tasks=8, fold_batch=4), sizes).run()
    previous, current = sim.prompts[-2], sim.prompts[-1]  # the big task 14 arrives in the window

    assert not _folded_between(previous, current)
    assert serialized(current).startswith(serialized(previous)), "the previous request is a cache hit, whole"
    levels = current.report["plan"]["levels"]
    assert all(levels[turn] == level for turn, level in previous.report["plan"]["levels"].items())
    assert levels["14"] == "tools_digested" and current.report["layers"]["recent"]["chars"] <= 20_000


def test_a_task_digested_on_arrival_gets_its_tool_results_back_at_the_next_fold():
    sizes = [2_000] * 13 + [6_000] + [2_000] * 3
    sim = Simulation(Policy(detailed_chars=20_000, detailed_tasks=8, fold_batch=4), sizes).run()
    arrived, after_fold = sim.prompts[14], sim.prompts[16]  # requests 15 and 17: task 17 is a fold

    assert arrived.report["plan"]["levels"]["14"] == "tools_digested"
    assert after_fold.report["summarized_through"] > arrived.report["summarized_through"]
    assert after_fold.report["plan"]["levels"]["14"] == "full"
    assert after_fold.report["layers"]["recent"]["chars"] <= 20_000


def test_when_the_newest_task_does_not_fit_even_shortened_the_next_batch_folds_early():
    policy = Policy(detailed_chars=6_000, detailed_tasks=4, fold_batch=2, tool_digest_chars=100)
    records = [r for turn in range(1, 6) for r in make_task(turn, answer=chr(64 + turn) * 1_400)]
    plan = None
    for turn in range(2, 7):  # each request is built from the tasks done so far and continues the last plan
        done = [r for r in records if r.turn < turn]
        prompt = build_prompt(
            PromptInputs(policy=policy, system="S", instruction="Next", turn=turn, tasks=tasks_of(done), previous_plan=plan)
        )
        plan = context.WindowPlan.from_json(prompt.report["plan"])

    # Tasks 1-4 filled the window; task 5 does not fit even shortened: 1 and 2 fold together.
    assert prompt.report["digested_tasks"] == [1, 2] and prompt.report["detailed_tasks"] == [3, 4, 5]
    assert prompt.report["fold_through"] == 2
    assert any("1–2 folded early" in note for note in prompt.report["notes"])
    assert prompt.report["layers"]["recent"]["chars"] <= 6_000


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def test_an_interrupted_tool_call_in_the_window_is_repaired():
    records = make_task(1, interrupted=True) + make_task(2, tool_chars=100)
    prompt = build_prompt(PromptInputs(policy=Policy(), system="S", instruction="Go on", turn=3, tasks=tasks_of(records)))

    assert find_faults(prompt.as_messages()) == []
    repaired = [m for m in prompt.messages if isinstance(m, ToolMessage) and m.status == "error"]
    assert [m.tool_call_id for m in repaired] == ["toolu_1"]


def test_the_current_tool_loop_comes_last_and_a_huge_result_is_capped():
    call = ToolCall(id="toolu_9", name="read_document", args={"title": "Q3"})
    current = (
        Record(id="c1", previous=None, turn=3, role="assistant", tool_calls=(call,)),
        Record(id="c2", previous=None, turn=3, role="tool", content="row\n" * 50_000, tool_call_id="toolu_9"),
    )
    prompt = build_prompt(
        PromptInputs(policy=Policy(), system="S", instruction="Read Q3", turn=3, tasks=tasks_of(make_task(1) + make_task(2)), current=current)
    )

    assert isinstance(prompt.messages[-3], HumanMessage) and prompt.messages[-3].content == "Read Q3"
    assert isinstance(prompt.messages[-2], AIMessage) and isinstance(prompt.messages[-1], ToolMessage)
    assert len(prompt.messages[-1].content) <= Policy().detailed_chars // 2 + 40
    assert find_faults(prompt.as_messages()) == []


def test_memory_puts_pinned_items_first_and_stays_within_its_budget():
    items = tuple(MemoryEntry(id=i, text=f"Fact number {i} about the launch plan " + "z" * 60, kind="project", updated=i) for i in range(1, 80))
    pinned = MemoryEntry(id=500, text="Always write in British English.", kind="rule", pinned=True)
    prompt = build_prompt(PromptInputs(policy=Policy(memory_chars=1_000), system="S", instruction="Plan", turn=1, memory=(*items, pinned)))
    memory = prompt.report["layers"]["memory"]

    assert memory["items"][0] == 500
    assert memory["chars"] <= 1_000 + len(context.MEMORY_HEADER) + 80
    assert "did not fit" in " ".join(prompt.report["notes"])


def test_memory_too_large_for_its_layer_keeps_the_front_fixed_and_brings_what_bears_on_the_instruction_in_the_tail():
    fillers = tuple(MemoryEntry(id=i, text=f"Fact {i}: the office plant needs water on day {i}.", kind="company", updated=10 + i)
                    for i in range(3, 13))
    items = (
        MemoryEntry(id=1, text="The Team plan costs $29 a month.", kind="decision", updated=1),
        MemoryEntry(id=2, text="Our newsletter goes out on Thursdays.", kind="project", updated=2),
        *fillers,
    )
    # Room for the five newest lines beside the frames, and nothing more.
    budget = sum(len(f"- [company] {m.text}") + 1 for m in fillers[-5:]) + context.MEMORY_FRAME_CHARS
    ask = lambda instruction: build_prompt(PromptInputs(  # noqa: E731
        policy=Policy(memory_chars=budget), system="S", instruction=instruction, turn=2, tasks=tasks_of(make_task(1)), memory=items))
    pricing, newsletter = ask("What does the Team plan cost?"), ask("When does the newsletter go out?")

    # Layer 2 holds the newest items whatever is asked, so the cached front is the same for both.
    layer = pricing.report["layers"]["memory"]["items"]
    assert pricing.system == newsletter.system and layer and layer == [m.id for m in fillers][-len(layer):]
    # Layer 2 and the tail's memory share memory's budget.
    tail_lines = [line for line in pricing.messages[-2].content.splitlines() if line.startswith("- [")]
    assert len(pricing.system[1]) + sum(len(line) + 1 for line in tail_lines) <= budget
    assert pricing.report["layers"]["recalled"]["memory_items"] == [1] and "$29" in pricing.messages[-2].content
    assert newsletter.report["layers"]["recalled"]["memory_items"] == [2] and "Thursdays" in newsletter.messages[-2].content


def test_an_item_a_kept_tail_listed_is_not_shown_again_when_layer_2_makes_room_for_it():
    old = [MemoryEntry(id=i, text=f"Old fact {i}: the office plant needs water on day {i}.", kind="company", updated=10 + i) for i in (1, 2)]
    venue = MemoryEntry(id=3, text="The offsite venue is Lakeview Lodge, booked for the whole team from 4 to 6 May.", kind="decision", updated=1)
    line = lambda m: len(f"- [{m.kind}] {m.text}") + 1  # noqa: E731
    # Layer 2 holds one old fact; the venue fits beside it only once the other one is gone.
    policy = Policy(memory_chars=line(old[0]) + line(venue) + 6 + context.MEMORY_FRAME_CHARS)
    first = build_prompt(PromptInputs(policy=policy, system="S", instruction="Which venue for the offsite?", turn=1, memory=(*old, venue)))
    assert first.report["layers"]["memory"]["items"] == [2]
    assert first.report["layers"]["recalled"]["memory_items"] == [3], "the venue rides in the tail"

    # The newest fact is forgotten: layer 2 now has room for the venue, which the kept tail lists.
    second = build_prompt(PromptInputs(
        policy=policy, system="S", instruction="Which venue for the offsite?", turn=2, tasks=tasks_of(make_task(1)),
        memory=(old[0], venue), previous_plan=context.WindowPlan.from_json(first.report["plan"]),
        shown_tails={1: context.ShownTail.from_json(first.report["tail"])},
    ))
    assert second.report["layers"]["memory"]["items"] == [1, 3]
    assert whole(second).count("Lakeview Lodge") == 1


def test_memory_added_since_the_last_fold_rides_in_the_tail_so_the_front_stays_cached():
    old = MemoryEntry(id=1, text="Our target customer is freelance designers.", kind="company")
    new = MemoryEntry(id=2, text="The launch is on May 4.", kind="project", fresh=True)
    prompt = build_prompt(PromptInputs(policy=Policy(), system="S", instruction="Plan", turn=2, tasks=tasks_of(make_task(1)), memory=(old, new)))

    assert "freelance designers" in prompt.system[1] and "May 4" not in prompt.system[1]
    tail = prompt.messages[-2]
    assert isinstance(tail, HumanMessage) and "May 4" in tail.content
    assert prompt.report["layers"]["recalled"]["memory_items"] == [2]


def test_recall_brings_back_the_exchange_that_matters_verbatim_labelled_with_its_task_and_date():
    candidates = (
        RecallCandidate(turn=3, instruction="Draft the hiring post", answer="Posted the job ad for a designer.", score=1.0),
        RecallCandidate(
            turn=5, instruction="What should the Team plan cost?", answer="We agreed on $29 per month for the Team plan.",
            coworker="sam", score=9.0, when="Mon 4 May 2026",
        ),
        RecallCandidate(turn=7, instruction="Plan the launch party", answer="Booked the venue for May 4.", score=2.0),
    )
    prompt = build_prompt(
        PromptInputs(
            policy=Policy(),
            system="S",
            instruction="Remind me what price we agreed for the Team plan?",
            turn=30,
            summarized_through=20,
            summary="## Topics covered\n- Tasks 1–20: many things",
            tasks=tasks_of(make_task(21)),
            recall=candidates,
        )
    )
    tail = prompt.messages[-2].content

    assert prompt.report["layers"]["recalled"]["tasks"] == [5], "the weak matches fall below the cut-off"
    assert "User: What should the Team plan cost?\nSam: We agreed on $29 per month for the Team plan." in tail
    assert "## Task 5, Mon 4 May 2026" in tail


def test_recalled_exchanges_of_consecutive_tasks_read_as_one_block_and_say_each_turn_once():
    monday, tuesday = "Mon 4 May 2026", "Tue 5 May 2026"
    asked = "Which venue do you like for the offsite?"
    candidates = (
        RecallCandidate(turn=4, instruction="Find venues for the offsite", answer=f"Three options. {asked}", score=9.0, when=monday,
                        after="Lakeview Lodge, for the offsite."),
        RecallCandidate(turn=5, instruction="Lakeview Lodge, for the offsite.", answer="Booked Lakeview Lodge for the offsite.", score=8.0,
                        when=monday, before=asked),
        RecallCandidate(turn=6, instruction="Tell the team about the offsite", answer="Sent the offsite invite.", score=7.0, when=tuesday),
    )
    chosen = context.select_recall(candidates, 10_000)
    tail = context._tail_text([], chosen)

    assert [c.turn for c in chosen] == [4, 5, 6]
    assert "## Tasks 4–5, Mon 4 May 2026\nUser: Find venues for the offsite\n" in tail
    assert tail.count(asked) == 1 and tail.count("Lakeview Lodge, for the offsite.") == 1
    # Another day is another block, with its own date.
    assert "## Task 6, Tue 5 May 2026\nUser: Tell the team about the offsite" in tail
    # What the selection counted is what the tail is.
    room = len(tail) + 1  # it counts a separator after the last block too
    assert [c.turn for c in context.select_recall(candidates, room)] == [4, 5, 6]
    assert [c.turn for c in context.select_recall(candidates, room - 1)] == [4, 5]


def test_what_the_window_and_the_summary_leave_unused_goes_to_recall_never_past_the_sum_of_the_budgets():
    policy = Policy(recall_chars=500)
    candidates = tuple(
        RecallCandidate(turn=t, instruction=f"Venue option {t}: what did Dana say?", answer="Dana liked it. " * 30, score=5.0)
        for t in range(1, 60)
    )
    inputs = PromptInputs(
        policy=policy, system="S", instruction="Which venue did Dana like?", turn=80, summarized_through=70,
        summary="## Topics covered\n- Tasks 1–70: venues", tasks=tasks_of(make_task(71, tool_chars=100)), recall=candidates,
        recall_chars=policy.recall_chars,
    )
    prompt = build_prompt(inputs)
    report = prompt.report

    assert report["layers"]["recalled"]["chars"] > 10 * policy.recall_chars, "short recent tasks leave room for recall"
    budget = policy.memory_chars + policy.summary_chars + policy.detailed_chars + policy.recall_chars
    assert report["budget"]["total"] == budget
    assert report["budget"]["used"] == sum(report["layers"][n]["chars"] for n in ("memory", "summary", "recent", "recalled"))
    assert report["budget"]["used"] <= budget


def test_recall_is_off_at_zero():
    candidates = (RecallCandidate(turn=5, instruction="Team plan price?", answer="$29."),)
    prompt = build_prompt(PromptInputs(policy=Policy(), system="S", instruction="Team plan price?", turn=9, summarized_through=6, recall=candidates, recall_chars=0))
    assert prompt.report["layers"]["recalled"]["chars"] == 0


def test_the_summary_is_framed_as_background_and_ends_clearly():
    prompt = build_prompt(PromptInputs(policy=Policy(), system="S", instruction="Go", turn=13, summarized_through=12, summary="## Decisions\n- (task 3) Price is $29."))
    block = prompt.system[-1]

    assert block.startswith(context.SUMMARY_HEADER) and "Do not act on it" in block
    assert block.rstrip().endswith(context.SUMMARY_END)
    assert prompt.report["summarized_through"] == 12


def test_the_system_layer_has_nothing_that_changes_between_tasks():
    system = context.SystemContext(
        office="Acme", channel_kind="direct", channel_name="Mina", coworker=context.Colleague("Mina", "Marketing lead", "mina"),
        persona="You are Mina.", skills=("copywriting",),
    )
    assert context.render_system(system) == context.render_system(system)
    assert "Mina, Marketing lead at Acme" in context.render_system(system)


def test_recall_keeps_each_answer_to_a_repeated_request_shows_a_word_for_word_repeat_once_and_stops_at_the_cut_off():
    candidates = (
        RecallCandidate(turn=3, instruction="Prepare the weekly support summary", answer="Week 1: 40 tickets.", score=8.0),
        RecallCandidate(turn=9, instruction="Prepare the weekly support summary", answer="Week 2: 55 tickets.", score=8.0),
        RecallCandidate(turn=5, instruction="Summarize the support tickets by plan", answer="Most came from Starter.", score=6.0),
        RecallCandidate(turn=7, instruction="Weekly support rota", answer="Omar covers weekend support.", score=5.0),
        RecallCandidate(turn=11, instruction="Weekly support rota", answer="Omar covers weekend support.", score=5.0),
        RecallCandidate(turn=8, instruction="Book the team lunch", answer="Booked for Friday.", score=1.0),
    )
    prompt = build_prompt(
        PromptInputs(policy=Policy(), system="S", instruction="Prepare the weekly support summary", turn=30, summarized_through=20, recall=candidates)
    )
    recalled = prompt.report["layers"]["recalled"]["tasks"]

    assert recalled == [3, 5, 9, 11], (
        "oldest first; both weeks' answers (they say different things); the rota said again at 11 "
        "shown once, the latest; task 8 falls below the cut-off"
    )


# Tails: what a task was shown stays in front of it until the next fold --------------------


def test_memory_simulations_keep_tails_between_folds():
    # The property test above runs with tails too: here they are kept, and within the budget.
    sim = Simulation(Policy(detailed_chars=8_000, detailed_tasks=4, fold_batch=4), [1_500] * 20, memory=True).run()
    kept = [p.report["layers"]["recent"]["kept_tails"] for p in sim.prompts]
    assert sum(map(len, kept)) > 10
    assert all(p.report["layers"]["recent"]["chars"] <= 8_000 for p in sim.prompts)


class LiveSession:
    """Tasks run the way the pipeline runs them: a model call before the tool loop and one after
    its tool result, each prompt built from the tails and the plan stored at the task's first call."""

    def __init__(self, policy: Policy, *, coworker_of=lambda turn: "mina", tool_chars: int = 400):
        self.policy, self.coworker_of, self.tool_chars = policy, coworker_of, tool_chars
        self.records: list[Record] = []
        self.tails: dict[int, context.ShownTail] = {}
        self.plan = None
        self.memory: list[MemoryEntry] = []
        self.recall: tuple[RecallCandidate, ...] = ()
        self.calls: list[context.Prompt] = []  # every model call, in order

    def build(self, turn: int, current=()) -> context.Prompt:
        return build_prompt(
            PromptInputs(
                policy=self.policy,
                system="You are Mina, the marketing lead.",
                instruction=f"Instruction {turn}",
                turn=turn,
                tasks=tasks_of(self.records),
                current=tuple(current),
                memory=tuple(self.memory),
                recall=self.recall,
                recall_chars=self.policy.recall_chars,
                summarized_through=0,
                previous_plan=self.plan,
                shown_tails=self.tails,
                coworker=self.coworker_of(turn),
            )
        )

    def run_task(self, turn: int, during_loop=None) -> None:
        task = make_task(turn, tool_chars=self.tool_chars)
        first = self.build(turn)
        # Stored at the first call: later calls show its tail and continue its plan.
        self.tails[turn] = context.ShownTail.from_json(first.report["tail"])
        self.plan = context.WindowPlan.from_json(first.report["plan"])
        # Memory can change while the tool loop runs (an earlier task's extraction lands).
        self.memory.append(MemoryEntry(id=100 + turn, text=f"Learned during task {turn}.", kind="project", fresh=True))
        if during_loop:
            during_loop(self)
        after_tool = self.build(turn, current=task[1:3])
        self.calls += [first, after_tool]
        self.records += task


def whole(prompt: context.Prompt) -> str:
    return serialized(prompt, upto_window=False)


def test_between_folds_a_task_begins_with_the_whole_last_call_of_the_one_before_tail_and_tool_loop_included():
    live = LiveSession(Policy(detailed_tasks=8, fold_batch=4))
    # An old task every instruction bears on (the builder takes the loader's word that it is old).
    live.recall = (RecallCandidate(turn=0, instruction="Instruction about pricing", answer="We agreed on $29."),)
    for turn in range(1, 12):  # no fold yet: the window grows to 11 tasks
        live.run_task(turn)

    for previous, current in zip(live.calls, live.calls[1:]):
        assert whole(current).startswith(whole(previous))
    last = live.calls[-1]
    assert last.report["layers"]["recent"]["kept_tails"] == list(range(1, 11))
    # The kept tails are the recalled layer's, in tokens as in characters.
    recent, recalled = last.report["layers"]["recent"], last.report["layers"]["recalled"]
    assert recent["tokens"] <= recent["chars"] / 3 and recalled["tokens"] >= recalled["kept_chars"] / 5
    # Each fact is in the prompt once: a tail leaves out what an earlier tail already shows.
    text = whole(last)
    assert all(text.count(f"Learned during task {turn}.") == 1 for turn in range(1, 11))


def test_a_later_call_of_the_tool_loop_shows_the_tail_its_first_call_showed():
    live = LiveSession(Policy())
    live.run_task(1)
    live.run_task(2)
    first, after_tool = live.calls[-2:]

    assert "Learned during task 1." in first.messages[first.window_end + 1].content
    # Task 2's own fact was learned during its tool loop: it waits for the next task's tail.
    assert after_tool.messages[after_tool.window_end + 1].content == first.messages[first.window_end + 1].content
    assert "Learned during task 2." not in whole(after_tool)


def test_at_a_fold_the_tails_go_and_nothing_they_held_is_lost():
    live = LiveSession(Policy(detailed_tasks=4, fold_batch=2))
    for turn in range(1, 8):
        live.run_task(turn)
    prompts = live.calls[::2]  # the first call of each task
    fold = next(p for p in prompts if p.report["fold_through"] > 0)
    recent = fold.messages[: fold.window_end + 1]

    assert fold.report["layers"]["recent"]["kept_tails"] == []
    assert not any(m.content.startswith(context.RECALL_HEADER) for m in recent if isinstance(m, HumanMessage))
    # The memory the dropped tails held is still fresh (no summary landed): the new tail shows it all.
    tail = fold.messages[fold.window_end + 1].content
    turn = fold.report["turn"]
    assert all(f"Learned during task {t}." in tail for t in range(1, turn))


def test_a_recalled_task_already_in_a_kept_tail_is_not_recalled_again():
    live = LiveSession(Policy(detailed_tasks=8, fold_batch=4))
    live.recall = (RecallCandidate(turn=0, instruction="Instruction about pricing", answer="We agreed on $29."),)
    live.run_task(1)
    live.run_task(2)
    first_of_1, first_of_2 = live.calls[0], live.calls[2]

    assert first_of_1.report["recalled_tasks"] == [0]
    assert first_of_2.report["recalled_tasks"] == []  # still in front of task 1, right above
    assert whole(first_of_2).count("We agreed on $29.") == 1


def test_a_tail_shown_to_one_coworker_is_not_kept_for_another():
    # A shared channel: task 1 is Mina's, task 2 Theo's. Mina's fresh memory may be hers alone.
    live = LiveSession(Policy(), coworker_of=lambda turn: "mina" if turn == 1 else "theo")
    live.memory.append(MemoryEntry(id=1, text="Mina's own note.", kind="preference", fresh=True))
    live.run_task(1)
    first_of_2 = live.build(2)

    assert live.calls[0].report["tail"]["coworker"] == "mina"
    assert first_of_2.report["layers"]["recent"]["kept_tails"] == []


def test_a_kept_tail_never_takes_the_request_over_its_budget():
    # The tails share what the layers leave unused: once the window grows into that room, the
    # kept tail that no longer fits goes, with those after it (the prompt changes there, as at a fold).
    policy = Policy(detailed_chars=1_000, memory_chars=1_000, summary_chars=200, recall_chars=100)
    live = LiveSession(policy, tool_chars=100)
    live.recall = (RecallCandidate(turn=0, instruction="Instruction about the venue", answer="Lakeview Lodge. " * 15),)
    for turn in range(1, 8):
        live.run_task(turn)
    budget = policy.memory_chars + policy.summary_chars + policy.detailed_chars + policy.recall_chars
    firsts = live.calls[::2]

    assert firsts[0].report["recalled_tasks"] == [0]
    assert [p.report["layers"]["recent"]["kept_tails"] for p in firsts[-2:]] == [[1, 2, 3, 4, 5], [1, 2, 3, 4]]
    assert all(p.report["budget"]["used"] <= budget for p in live.calls)
    assert all(p.report["layers"]["recent"]["chars"] <= policy.detailed_chars for p in live.calls)
    assert all(whole(p).count("Lakeview Lodge. " * 15) == 1 for p in live.calls)


def test_while_recall_fills_the_room_every_tail_stays_in_front_of_its_task_until_the_next_fold():
    # Recall finds more than any prompt holds, and tasks of the usual size keep joining the
    # window: each new tail leaves room for them and for their own tails. (No memory is learned.)
    policy = Policy(detailed_tasks=8, fold_batch=4)
    live = LiveSession(policy, tool_chars=1_400)
    live.recall = tuple(
        RecallCandidate(turn=t, session=7, earlier_session=True, instruction=f"Instruction about pricing {t}", answer="We agreed. " * 36)
        for t in range(1, 60)
    )
    for turn in range(1, 25):
        live.run_task(turn, during_loop=lambda live: live.memory.clear())
    budget = policy.memory_chars + policy.summary_chars + policy.detailed_chars + policy.recall_chars
    firsts = live.calls[::2]

    for before, after in zip(firsts, firsts[1:]):
        if after.report["plan"]["boundary"] == before.report["plan"]["boundary"]:  # no fold between them
            shown = [before.report["turn"]] if before.report["tail"]["text"] else []  # a task recall left no room has none
            assert after.report["layers"]["recent"]["kept_tails"] == before.report["layers"]["recent"]["kept_tails"] + shown
    for before, after in zip(live.calls, live.calls[1:]):
        if after.report["plan"]["boundary"] == before.report["plan"]["boundary"]:
            assert whole(after).startswith(whole(before))
    assert all(p.report["budget"]["used"] <= budget for p in live.calls)
    assert sum(p.report["layers"]["recalled"]["chars"] for p in firsts) > 2 * policy.recall_chars * len(firsts)


def test_an_old_and_a_new_answer_are_recalled_in_the_order_they_were_given_and_a_kept_tail_is_not_repeated():
    live = LiveSession(Policy(detailed_tasks=8, fold_batch=4))
    live.recall = (
        RecallCandidate(turn=3, instruction="Instruction: price of the Pro plan", answer="The Pro plan is $19."),
        RecallCandidate(turn=9, instruction="Instruction: price of the Pro plan", answer="The Pro plan is $29 now."),
    )
    live.run_task(1)
    following = live.build(2)

    shown = live.calls[0].messages[live.calls[0].window_end + 1].content
    assert live.calls[0].report["recalled_tasks"] == [3, 9]
    assert shown.index("$19") < shown.index("$29 now"), "the model reads which price came last"
    assert following.report["recalled_tasks"] == []  # both are right above, in task 1's tail
    assert whole(following).count("$29 now") == 1


def test_a_kept_tail_listing_memory_since_forgotten_or_changed_goes():
    live = LiveSession(Policy(detailed_tasks=8, fold_batch=4))
    live.memory = [
        MemoryEntry(id=1, text="Theo is on leave in May.", kind="company", fresh=True),
        MemoryEntry(id=2, text="The Team plan costs $25.", kind="project", fresh=True),
    ]
    live.run_task(1)
    live.run_task(2)
    assert live.build(3).report["layers"]["recent"]["kept_tails"] == [1, 2]

    # Task 3 forgets the first item and changes the second.
    live.memory = [m for m in live.memory if m.id not in (1, 2)] + [
        MemoryEntry(id=2, text="The Team plan costs $29.", kind="project", fresh=True)
    ]
    prompt = live.build(3)

    assert 1 not in prompt.report["layers"]["recent"]["kept_tails"]
    assert "on leave" not in whole(prompt) and "$25" not in whole(prompt)
    assert "$29" in prompt.messages[prompt.window_end + 1].content


def test_forgetting_what_a_kept_tail_listed_during_a_tool_loop_loses_nothing_else_and_repeats_nothing():
    live = LiveSession(Policy(detailed_tasks=8, fold_batch=4))
    live.recall = (RecallCandidate(turn=0, instruction="Instruction about pricing", answer="We agreed on $29."),)
    live.memory = [MemoryEntry(id=1, text="Theo is on leave in May.", kind="company", fresh=True)]
    live.run_task(1)  # its tail: task 0 recalled, Theo's leave

    def forget_theos_leave(live):
        live.memory = [m for m in live.memory if m.id != 1]

    live.run_task(2, during_loop=forget_theos_leave)
    first, after_tool = live.calls[2:4]

    assert first.report["layers"]["recent"]["kept_tails"] == [1] and first.report["recalled_tasks"] == []
    # Task 1's tail goes; what else it held comes back in task 2's own, once.
    text = whole(after_tool)
    assert after_tool.report["layers"]["recent"]["kept_tails"] == []
    assert "on leave" not in text
    assert text.count("We agreed on $29.") == 1 and text.count("Learned during task 1.") == 1


def test_a_fact_changed_during_a_tool_loop_is_shown_as_it_is_now():
    live = LiveSession(Policy(detailed_tasks=8, fold_batch=4))
    live.memory = [MemoryEntry(id=5, text="The Team plan costs $25.", kind="project")]  # in layer 2
    live.run_task(1)

    def change_the_price(live):
        live.memory = [m for m in live.memory if m.id != 5] + [
            MemoryEntry(id=5, text="The Team plan costs $29.", kind="project", fresh=True)
        ]

    live.run_task(2, during_loop=change_the_price)
    after_tool = live.calls[3]

    assert "$25" not in whole(after_tool)
    assert whole(after_tool).count("The Team plan costs $29.") == 1


def test_it_keeps_one_task_of_5000_tool_calls_within_the_detailed_budget():
    policy = Policy()
    records = [Record(id="u", previous=None, turn=1, role="user", content="Read every document")]
    for n in range(5_000):
        call = ToolCall(id=f"toolu_{n}", name="read_document", args={"title": f"doc {n}"})
        records.append(Record(id=f"c{n}", previous=None, turn=1, role="assistant", tool_calls=(call,)))
        records.append(Record(id=f"r{n}", previous=None, turn=1, role="tool", content="result " * 30, tool_call_id=call.id))
    records.append(Record(id="a", previous=None, turn=1, role="assistant", content="All 5,000 read.", coworker="mina"))

    prompt = build_prompt(PromptInputs(policy=policy, system="S", instruction="Next", turn=2, tasks=tasks_of(records)))

    recent = prompt.report["layers"]["recent"]
    assert recent["tasks"] == [1] and recent["chars"] <= policy.detailed_chars  # was 609,000 characters
    assert find_faults(prompt.as_messages()) == []
    texts = [str(m.content) for m in prompt.messages]
    assert texts[0] == "Read every document" and "All 5,000 read." in texts
    assert any("steps left out to fit the budget" in t and "read_document ×" in t for t in texts)
    assert not any("alone is larger than the detailed budget" in note for note in prompt.report["notes"])


def test_a_task_whose_instruction_is_empty_does_not_break_the_next_prompt():
    # Stored before imports refused it: the first instruction is empty, so the model is sent the history from task 2.
    records = [
        Record(id="1-u", previous=None, turn=1, role="user", content=""),
        Record(id="1-a", previous=None, turn=1, role="assistant", content="Hello?", coworker="mina"),
        *make_task(2),
    ]

    prompt = build_prompt(PromptInputs(policy=Policy(), system="S", instruction="Next", turn=3, tasks=tasks_of(records)))

    assert prompt.report["layers"]["recent"]["tasks"] == [1, 2]
    assert find_faults(prompt.as_messages()) == []
    assert prompt.messages[0].content == "Instruction 2"
