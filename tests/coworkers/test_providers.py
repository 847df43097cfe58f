"""The provider interface, the scripted provider and the offline responder: pure, no database."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from coworkers.providers import (
    Completion,
    CompletionRequest,
    OfflineResponder,
    Provider,
    ProviderError,
    ToolSpec,
    Usage,
    estimate_message_tokens,
    estimate_tokens,
    get_provider,
)
from coworkers.providers.offline import (
    FOUND,
    FOUND_ZH,
    NEEDS_A_MODEL,
    NEEDS_A_MODEL_ZH,
    NOTHING_TO_ADD,
    NOTHING_TO_REMEMBER,
    NOTHING_YET,
    NOTHING_YET_ZH,
    NOTED,
    NOTED_ZH,
    THANKS,
    THANKS_ZH,
)
from coworkers.providers.scripted import CallTools, Fail, Reply, ScriptedProvider, ScriptExhausted
from sessions import context
from sessions.history import InvalidSequence, Record, TaskRecords, ToolCall
from sessions.policy import Policy
from sessions.summarize import SECTIONS, summarize_extractively

PERSONA = "You are Mina, Marketing lead at Acme.\nYou write short, warm copy."
MEMORY = (
    "# Long-term memory\n"
    "Durable facts about the user, the company and past decisions.\n"
    "- [company] Acme sells planning software to small agencies.\n"
    "- [decision] The Pro plan costs $29 per month, billed monthly.\n"
    "- [preference] Alice prefers short bullet-point answers."
)
SUMMARY = (
    "# Earlier in this conversation (summary)\n"
    f"{context.SUMMARY_FRAME}\n\n"
    "Tasks 1–4:\n"
    "## Decisions\n"
    "- (task 3) We decided to launch on 3 March, after the beta ends.\n"
    "## Topics covered\n"
    "- Tasks 1–2: drafted the landing page copy\n"
    f"{context.SUMMARY_END}"
)


def ask(text: str, *earlier, system=(PERSONA, MEMORY, SUMMARY), **kwargs) -> CompletionRequest:
    return CompletionRequest(
        purpose="reply",
        system=system,
        messages=(*earlier, HumanMessage(text)),
        model="offline-test",
        max_output_tokens=512,
        **kwargs,
    )


def record(id: str, previous: str | None, role: str, content: str = "", **kwargs) -> Record:
    return Record(id=id, previous=previous, turn=kwargs.pop("turn", 1), role=role, content=content, **kwargs)


def pricing_task(turn: int = 3) -> TaskRecords:
    return TaskRecords(
        turn=turn,
        records=(
            record("u", None, "user", "Let's go with $29 per month for the Pro plan.", turn=turn),
            record("a", "u", "assistant", "Done: we decided on $29 per month for the Pro plan.", coworker="mina", turn=turn),
        ),
    )


# --- the interface ---------------------------------------------------------------


def test_it_estimates_about_four_characters_a_token_for_english():
    assert estimate_tokens("") == 0
    assert estimate_tokens("a" * 400) == 100
    assert estimate_tokens("The launch is on the third of March.") == 9  # 36 characters


def test_it_estimates_about_one_token_a_character_for_chinese():
    text = "我們決定定價為每月美元"
    assert estimate_tokens(text) == len(text)
    # Mixed text counts each part its own way: 11 CJK characters and 4 others ("29 $").
    assert estimate_tokens("我們決定定價為每月美元29 $") == 11 + 1


def test_it_estimates_messages_with_three_tokens_each():
    messages = [HumanMessage("a" * 40), AIMessage("b" * 40)]
    assert estimate_message_tokens(messages) == 10 + 3 + 10 + 3


def test_it_rejects_a_request_with_an_unknown_purpose():
    with pytest.raises(ValueError, match="purpose"):
        CompletionRequest("chat", (), (HumanMessage("hi"),), "m", 100)


def test_it_keeps_a_request_immutable_and_its_breakpoints_in_range():
    request = CompletionRequest("reply", ["system"], [HumanMessage("hi")], "m", 100, cache_after=[0])
    assert request.system == ("system",) and isinstance(request.messages, tuple)
    with pytest.raises(ValueError, match="cache_after"):
        CompletionRequest("reply", (), (HumanMessage("hi"),), "m", 100, cache_after=(1,))


def test_it_adds_usage_across_the_calls_of_a_task():
    total = Usage(10, 5, 0, 3) + Usage(2, 0, 15, 4)
    assert total == Usage(12, 5, 15, 7)
    assert total.total_input_tokens == 32


def test_it_picks_the_offline_responder_without_an_api_key(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    provider = get_provider()
    assert isinstance(provider, OfflineResponder) and provider.offline
    assert isinstance(provider, Provider)


# --- the scripted provider -------------------------------------------------------


def test_it_streams_a_scripted_reply_in_chunks():
    provider = ScriptedProvider([Reply("Music has the most views.", chunk_size=5)])
    chunks: list[str] = []
    completion = provider.complete(ask("Which category has the most views?"), on_text=chunks.append)
    assert chunks == ["Music", " has ", "the m", "ost v", "iews."]
    assert completion.text == "Music has the most views."
    assert completion.stop_reason == "end_turn"
    assert completion.model == "offline-test"
    assert completion.usage.input_tokens > 0 and completion.usage.output_tokens == estimate_tokens(completion.text)


def test_it_stops_a_scripted_reply_when_asked():
    provider = ScriptedProvider([Reply("one two three four five", chunk_size=4)])
    chunks: list[str] = []
    completion = provider.complete(ask("Count"), on_text=chunks.append, should_stop=lambda: len(chunks) >= 2)
    assert completion.stop_reason == "stopped"
    assert completion.text == "one two " == "".join(chunks)


def test_it_records_every_request():
    provider = ScriptedProvider([Reply("first"), Reply("second")])
    first, second = ask("One"), ask("Two")
    provider.complete(first)
    provider.complete(second)
    assert provider.requests == [first, second]
    assert provider.remaining == 0


def test_it_raises_the_scripted_failure():
    provider = ScriptedProvider([Fail(ProviderError("Claude is overloaded; try again shortly.", retryable=True))])
    with pytest.raises(ProviderError) as caught:
        provider.complete(ask("Hello"))
    assert caught.value.user_message == "Claude is overloaded; try again shortly."
    assert caught.value.retryable


def test_it_plays_scripted_tool_calls():
    call = ToolCall(id="toolu_1", name="read_document", args={"title": "Q3 views"})
    provider = ScriptedProvider([CallTools((call,), text="Let me look.")])
    completion = provider.complete(ask("Which category has the most views?"))
    assert completion.tool_calls == (call,)
    assert completion.text == "Let me look."
    assert completion.stop_reason == "tool_use"


def test_it_plays_a_dynamic_step():
    provider = ScriptedProvider([
        lambda request: Reply(request.instruction.upper()),
        lambda request: Completion(text="made by hand", stop_reason="max_tokens"),
    ])
    assert provider.complete(ask("shout this")).text == "SHOUT THIS"
    assert provider.complete(ask("again")).stop_reason == "max_tokens"


def test_it_complains_when_the_script_runs_out():
    provider = ScriptedProvider([Reply("only one")])
    provider.complete(ask("One"))
    with pytest.raises(ScriptExhausted, match="ran out of steps"):
        provider.complete(ask("Two"))
    assert issubclass(ScriptExhausted, AssertionError)


def test_it_rejects_a_sequence_claude_would_reject():
    orphan_call = AIMessage("", tool_calls=[{"name": "read_document", "args": {}, "id": "toolu_1", "type": "tool_call"}])
    provider = ScriptedProvider([Reply("never sent")])
    with pytest.raises(InvalidSequence):
        provider.complete(ask("Go on", HumanMessage("Read it"), orphan_call))
    assert provider.remaining == 1


# --- the offline responder: replies ------------------------------------------------


def test_it_answers_from_the_memory_item_holding_the_price_in_its_own_voice():
    completion = OfflineResponder().complete(ask("What did we decide about pricing?"))
    assert completion.text == f"{FOUND}\n\n- The Pro plan costs $29 per month, billed monthly (from memory)"
    assert "Offline" not in completion.text and "ANTHROPIC_API_KEY" not in completion.text, "the page says it, once"
    assert completion.model == "offline"


def test_it_answers_from_a_summary_decision_and_says_it_is_from_the_summary():
    completion = OfflineResponder().complete(ask("When is the launch?"))
    assert "- We decided to launch on 3 March, after the beta ends (from the summary)" in completion.text
    assert "task" not in completion.text, "people never see task numbers"



def test_what_a_coworker_handed_on_or_a_meeting_sent_is_theirs_not_what_you_said():
    earlier = (
        HumanMessage("Handoff from Mina: The pricing page goes live on May 4."),
        AIMessage("On it."),
        HumanMessage("Follow-up from the meeting “Launch go/no-go”: The press release goes out on May 5."),
        AIMessage("Will do."),
    )
    payload = {"turns": [3, 4], "said_on": ["2026-12-03", "2026-12-03"]}

    pricing = OfflineResponder().complete(ask("When does the pricing page go live?", *earlier, payload=payload))
    press = OfflineResponder().complete(ask("When does the press release go out?", *earlier, payload=payload))
    in_chinese = OfflineResponder().complete(ask("pricing page 什麼時候上線？", *earlier, payload=payload))

    assert pricing.text == f"{FOUND}\n\n- The pricing page goes live on May 4 (Mina said this on Dec 3)"
    assert press.text == f"{FOUND}\n\n- The press release goes out on May 5 (from the meeting “Launch go/no-go”)"
    assert "（Mina在12月3日說的）" in in_chinese.text


def test_a_sender_named_with_a_backslash_is_quoted_not_read_as_a_pattern():
    earlier = (HumanMessage("Handoff from dev\\ops: The build is green again."), AIMessage("Good to hear."))
    payload = {"turns": [3], "said_on": ["2026-12-03"]}

    completion = OfflineResponder().complete(ask("Is the build green?", *earlier, payload=payload))

    assert completion.text == f"{FOUND}\n\n- The build is green again (dev\\ops said this on Dec 3)"


def test_what_a_person_asked_to_remember_is_quoted_without_the_request_and_what_they_asked_to_forget_not_at_all():
    earlier = (
        HumanMessage("The beta goes live on Friday."),
        AIMessage("Thanks, noted."),
        HumanMessage("Remember that our launch budget is $40,000. Please remember to book the venue."),
        AIMessage("Noted: our launch budget is $40,000."),
        HumanMessage("Forget that the beta goes live on Friday."),
        AIMessage("Okay, I'll forget that the beta goes live on Friday."),
    )
    payload = {"turns": [2, 3, 4], "said_on": ["2026-12-03", "2026-12-03", "2026-12-03"]}

    budget = OfflineResponder().complete(ask("What is our launch budget?", *earlier, payload=payload))
    beta = OfflineResponder().complete(ask("When does the beta go live?", *earlier, payload=payload))

    venue = OfflineResponder().complete(ask("What about the venue?", *earlier, payload=payload))

    assert budget.text == f"{FOUND}\n\n- Our launch budget is $40,000 (you said this on Dec 3)"
    assert "Friday" not in beta.text, "not the request to forget it, nor what it asked to forget"
    assert "Book the venue" not in venue.text, "a reminder asked for is not quoted as an order"


def test_it_answers_from_what_a_person_said_never_from_a_reply():
    earlier = (
        HumanMessage("The landing page goes live on May 4. Draft a tagline for it."),
        AIMessage("Plan your agency's week in five minutes. The tagline works for the landing page."),
    )
    completion = OfflineResponder().complete(
        ask("When does the landing page go live?", *earlier, payload={"turns": [7], "said_on": ["2026-12-01"]})
    )
    assert completion.text == f"{FOUND}\n\n- The landing page goes live on May 4 (you said this on Dec 1)"
    assert "Plan your agency" not in completion.text and "Draft a tagline" not in completion.text, "no reply, no request"


def test_it_never_quotes_a_request_back():
    earlier = (HumanMessage("Remind me of the launch date"), AIMessage("Sure."), HumanMessage("Check the launch plan."))
    completion = OfflineResponder().complete(ask("What about the launch?", *earlier, system=(PERSONA,), payload={"turns": [1, 2]}))
    assert completion.text == NOTHING_YET


def test_it_answers_from_a_chinese_summary():
    summary = (
        "# Earlier in this conversation (summary)\n## Decisions\n"
        "- (task 2) 我們決定定價為每月 29 美元。\n- (task 4) 網站下週一上線。"
    )
    completion = OfflineResponder().complete(ask("價格是多少？", system=(PERSONA, summary)))
    assert completion.text.startswith(FOUND_ZH), "a Chinese question gets a Chinese answer"
    assert "- 我們決定定價為每月 29 美元（來自摘要）" in completion.text
    assert "上線" not in completion.text


def test_it_answers_from_a_prompt_the_context_builder_made():
    # The real layout, not a hand-written imitation of it: headers and bullets as sessions.context renders them.
    summary = summarize_extractively("", [pricing_task(turn=1)], max_chars=2_000, multi_speaker=False)
    tagline = TaskRecords(
        turn=2,
        records=(
            record("t1", None, "user", "Draft a tagline for the landing page", turn=2),
            record("t2", "t1", "assistant", "Plan your agency's week in five minutes.", coworker="mina", turn=2),
        ),
    )
    prompt = context.build_prompt(
        context.PromptInputs(
            policy=Policy(),
            system=PERSONA,
            instruction="What did we decide about pricing?",
            turn=3,
            memory=(context.MemoryEntry(id=1, text="Alice prefers short answers.", kind="preference"),),
            summary=summary,
            summarized_through=1,
            tasks=(tagline,),
        )
    )
    request = CompletionRequest(
        purpose="reply",
        system=prompt.system,
        messages=prompt.messages,
        model="offline-test",
        max_output_tokens=512,
        payload={"turns": prompt.report["detailed_tasks"]},
    )
    text = OfflineResponder().complete(request).text
    assert "(from the summary)" in text and "$29 per month" in text
    assert "tagline" not in text


def test_it_answers_from_what_the_person_said_in_a_recalled_exchange_not_from_the_reply():
    recalled = HumanMessage(
        context._tail_text([], [
            context.RecallCandidate(
                turn=2, instruction="We booked the Harbour Loft for the offsite.", answer="Great, the Harbour Loft it is.",
                coworker="mina", when="Sun 3 May 2026",  # as sessions.prompts writes it
            )
        ])
    )
    completion = OfflineResponder().complete(ask("Remind me about the offsite venue", recalled, system=(PERSONA,)))
    assert completion.text == f"{FOUND}\n\n- We booked the Harbour Loft for the offsite (you said this on May 3)"


def test_a_recalled_request_is_shown_as_what_was_asked_when_nothing_stated_answers():
    """The report lists the exchange it recalled; the reply says it is there, and cannot say more."""
    recalled = HumanMessage(
        context._tail_text([], [
            context.RecallCandidate(
                turn=1, instruction="Draft three taglines for the spring launch.", answer="1. Bloom into spring…",
                coworker="mina", when="Thu 3 Dec 2026", earlier_session=True,
            )
        ])
    )

    completion = OfflineResponder().complete(ask("What was the tagline you drafted for me?", recalled, system=(PERSONA,)))

    assert completion.text == (
        "I can't read what was answered without a model, but you asked about this before:\n\n"
        "- Draft three taglines for the spring launch (you said this on Dec 3)"
    )


def test_it_dates_what_the_person_said_in_a_block_of_consecutive_recalled_exchanges_by_that_block():
    recalled = HumanMessage(
        context._tail_text([], [
            context.RecallCandidate(turn=1, instruction="Plan the launch party.", answer="Planned.", coworker="mina", when="Fri 1 May 2026"),
            context.RecallCandidate(turn=5, instruction="Find a venue for the offsite.", answer="Which one?", coworker="mina", when="Sun 3 May 2026"),
            context.RecallCandidate(turn=6, instruction="We booked the Harbour Loft for the offsite.", answer="Great.", coworker="mina",
                                    when="Sun 3 May 2026"),
        ])
    )
    assert "## Tasks 5–6, Sun 3 May 2026" in recalled.content
    completion = OfflineResponder().complete(ask("Remind me about the offsite venue", recalled, system=(PERSONA,)))
    assert "- We booked the Harbour Loft for the offsite (you said this on May 3)" in completion.text


def test_news_the_person_states_is_acknowledged_not_answered_with_nothing():
    def reply(text):
        return OfflineResponder().complete(ask(text, system=(PERSONA,))).text

    assert reply("Team, the coffee machine on the third floor works again.") == THANKS
    assert reply("Team, the beta sign-up page goes live on Friday.") == NOTED, "a date the work goes live on is kept"
    assert reply("I prefer short answers.") == NOTED, "the memory keeps this one"
    assert reply("產品發表會訂在五月四日。") == THANKS_ZH
    assert reply("Is the beta live? It should be.") == NOTHING_YET, "a question is not news"
    for asked in ("where is the staging server", "is the launch still on Friday", "Send Sam the launch plan",
                  "I need the Q3 revenue numbers by Monday", "Summarise everything you know about logistics",
                  "Analyse the churn figures for the board"):
        assert reply(asked) == NOTHING_YET, f"{asked!r} asks, without a question mark"
    assert reply("預算是多少") == NOTHING_YET_ZH, "asks, without a question mark, in Chinese"


def test_news_is_acknowledged_even_when_memory_shares_a_word_or_a_number_with_it():
    # MEMORY holds "The Pro plan costs $29 per month": "29" and "plan" are in this news too.
    completion = OfflineResponder().complete(ask("Omar, we need 29 booth staff for the plan of the trade show."))
    assert completion.text in (THANKS, NOTED), completion.text


def test_it_says_it_has_nothing_yet_when_nothing_is_relevant():
    completion = OfflineResponder().complete(ask("Who is our lawyer?"))
    assert completion.text == NOTHING_YET


def test_it_acknowledges_a_request_to_remember_by_saying_what_it_will_remember():
    completion = OfflineResponder().complete(ask("Please remember that the launch date is May 4."))
    assert completion.text == "Noted: the launch date is May 4."
    assert OfflineResponder().complete(ask("Remember that I prefer short answers")).text == "Noted: you prefer short answers."


def test_it_acknowledges_a_request_to_remember_in_chinese():
    assert OfflineResponder().complete(ask("請記住上線日期是5月4日。")).text == "記下了：上線日期是5月4日。"
    assert OfflineResponder().complete(ask("記得我們的預算是 5000 美元")).text == "記下了：我們的預算是 5000 美元。"


def test_it_says_so_when_a_request_to_remember_holds_no_fact_it_will_store():
    # The extractor stores nothing from "remember to call Bob": saying "Noted" would promise a memory that never comes.
    assert OfflineResponder().complete(ask("Remember to call Bob")).text == NOTHING_TO_REMEMBER


def test_it_acknowledges_a_request_to_forget_plainly():
    assert OfflineResponder().complete(ask("Please forget the launch date.")).text == "Okay, I'll forget the launch date."
    assert OfflineResponder().complete(ask("請忘記上線日期")).text == "好的，我會忘記上線日期。"


def test_its_acknowledgement_never_quotes_an_earlier_reply():
    earlier = (HumanMessage("When is the launch?"), AIMessage("The launch is on May 4, I believe."))
    completion = OfflineResponder().complete(ask("Remember that the launch date is May 11.", *earlier))
    assert completion.text == "Noted: the launch date is May 11."


@pytest.mark.parametrize(
    "instruction",
    [
        "Show me a Python function that adds two numbers",
        "Draft a short tagline for the launch",
        "Write a haiku about autumn leaves",
        "Please translate our pricing into French",
        "Can you write the release notes?",
    ],
)
def test_it_says_writing_needs_a_model_when_asked_to_produce_something(instruction):
    completion = OfflineResponder().complete(ask(instruction))
    assert completion.text.startswith(NEEDS_A_MODEL)
    assert NOTHING_YET not in completion.text


@pytest.mark.parametrize("statement", ["Code review is on Friday.", "Draft: the launch plan", "Design reviews happen weekly."])
def test_a_statement_opening_with_a_verb_of_writing_is_not_a_request_to_write(statement):
    assert not OfflineResponder().complete(ask(statement)).text.startswith(NEEDS_A_MODEL)


def test_after_saying_writing_needs_a_model_it_adds_what_it_has_on_the_topic():
    completion = OfflineResponder().complete(ask("Draft a short tagline for the launch"))
    assert completion.text == (
        f"{NEEDS_A_MODEL}\n\n{FOUND}\n\n- We decided to launch on 3 March, after the beta ends (from the summary)"
    ), "about the launch, not about drafts or being short"


def test_it_says_writing_needs_a_model_in_chinese():
    assert OfflineResponder().complete(ask("幫我寫一段產品介紹")).text == NEEDS_A_MODEL_ZH


def test_it_still_answers_a_question_about_what_was_written():
    assert OfflineResponder().complete(ask("What did we decide about pricing?")).text.startswith(FOUND)


ADD_FUNCTION = "```python\ndef add(a, b):\n    return a + b\n```"


def test_it_finds_a_function_the_person_pasted_and_quotes_it_as_a_code_block():
    earlier = (
        HumanMessage("Show me a Python function that adds two numbers"),
        AIMessage(NEEDS_A_MODEL),
        HumanMessage(f"Here's my add function:\n{ADD_FUNCTION}"),
        AIMessage(NOTHING_YET),
    )
    completion = OfflineResponder().complete(
        ask("Can you show me that add function again?", *earlier, payload={"said_on": ["2026-11-30", "2026-12-01"]})
    )
    assert completion.text == f"{FOUND}\n\n- Here's my add function (you said this on Dec 1):\n\n{ADD_FUNCTION}"


def test_it_finds_code_the_person_pasted_in_an_earlier_conversation_through_recall():
    # In a new conversation the snippet is no longer in the window: only recall has it, with
    # the message's later lines (the code, a comment in it) under its "User:" line.
    pasted = f"Here's my add function:\n```python\n# the sum of two numbers\ndef add(a, b):\n    return a + b\n```"
    recalled = HumanMessage(
        context._tail_text([], [
            context.RecallCandidate(
                turn=6, session=1, instruction=pasted, answer="Noted.", coworker="mina", when="Tue 1 Dec 2026",
                earlier_session=True,
            ),
            context.RecallCandidate(turn=7, session=1, instruction="Thanks!", answer="Any time.", coworker="mina", when="Tue 1 Dec 2026"),
        ])
    )
    completion = OfflineResponder().complete(ask("Can you show me that add function again?", recalled))
    code = "```python\n# the sum of two numbers\ndef add(a, b):\n    return a + b\n```"
    assert completion.text == f"{FOUND}\n\n- Here's my add function (you said this on Dec 1):\n\n{code}"


def test_a_recalled_message_keeps_its_code_whatever_lines_it_holds():
    # A header line in the code, a "# comment", a coworker whose name starts with a digit.
    pasted = "My request handler:\n```http\nContent-Type: application/json\n# the body follows\n```"
    recalled = HumanMessage(
        context._tail_text([], [
            context.RecallCandidate(turn=4, session=1, instruction=pasted, answer="Looks fine to me:\n```python\n# keep this line\n```", coworker="3po", when="Tue 1 Dec 2026"),
            context.RecallCandidate(turn=9, session=1, instruction="The handler ships on Friday.", answer="Good.", coworker="3po",
                                    when="Wed 2 Dec 2026"),
        ])
    )
    def reply(text):
        return OfflineResponder().complete(ask(text, recalled, system=(PERSONA,))).text

    code = reply("Can you show me that request handler again?")
    assert "Content-Type: application/json\n# the body follows" in code and "Looks fine" not in code
    shipping = reply("When does the handler ship?")
    assert "The handler ships on Friday (you said this on Dec 2)" in shipping, "the block after the comment is still read"
    assert "Looks fine" not in shipping, "a coworker's reply is never quoted as the person's words"


def test_it_finds_a_code_block_pasted_on_its_own():
    completion = OfflineResponder().complete(ask("Can you show me that add function again?", HumanMessage(ADD_FUNCTION)))
    assert completion.text == f"{FOUND}\n\n- Your code (you said this earlier):\n\n{ADD_FUNCTION}"


def test_it_finds_code_pasted_without_a_fence_and_quotes_it_as_a_code_block():
    pasted = HumanMessage("My add function:\ndef add(a, b):\n    return a + b")
    completion = OfflineResponder().complete(ask("Can you show me that add function again?", pasted))
    assert completion.text == (
        f"{FOUND}\n\n- My add function (you said this earlier):\n\n```\ndef add(a, b):\n    return a + b\n```"
    )


def test_a_long_pasted_file_comes_back_as_its_opening_lines():
    long_file = "```python\n" + "\n".join(f"def add_{n}(a, b):\n    return a + b + {n}" for n in range(200)) + "\n```"
    completion = OfflineResponder().complete(ask("Show me the add functions again", HumanMessage(long_file)))
    assert "def add_0(a, b):" in completion.text and "def add_199" not in completion.text
    assert completion.text.endswith("\n…\n```") and len(completion.text) < 2_000


def test_prose_ending_with_a_colon_is_not_taken_for_code():
    said = HumanMessage("The launch plan is ready:\nthe launch is on May 4.")
    completion = OfflineResponder().complete(ask("When is the launch?", said, system=(PERSONA,)))
    assert "```" not in completion.text and "May 4" in completion.text


MEETING_AGENDA = "Agenda of the meeting “Launch”:\nWe decided to move the launch to May 11.\n- Who writes the announcement?"


def test_in_a_meeting_it_speaks_to_the_agenda_not_to_a_memory_the_agenda_contradicts():
    memory = "# Long-term memory\nDurable facts.\n- [project] The launch date is May 4."
    completion = OfflineResponder().complete(
        ask(MEETING_AGENDA, system=(PERSONA, memory), payload={"channel_kind": "meeting"})
    )
    assert completion.text == "On the agenda:\n\n- We decided to move the launch to May 11"
    assert "May 4" not in completion.text


def test_in_a_meeting_a_remember_line_on_the_agenda_is_spoken_to_like_the_rest():
    agenda = "Agenda of the meeting “Launch”:\nRemember that the launch moved to May 11."
    completion = OfflineResponder().complete(ask(agenda, payload={"channel_kind": "meeting"}))
    assert completion.text == "On the agenda:\n\n- Remember that the launch moved to May 11"


def test_in_a_meeting_the_next_participant_does_not_repeat_the_agenda():
    first = OfflineResponder().complete(ask(MEETING_AGENDA, payload={"channel_kind": "meeting"})).text
    after = ask(MEETING_AGENDA, payload={"channel_kind": "meeting"})
    second = CompletionRequest("reply", after.system, (*after.messages, AIMessage(first)), "m", 512, payload=after.payload)
    assert OfflineResponder().complete(second).text == NOTHING_TO_ADD


def test_a_second_coworker_does_not_repeat_an_acknowledgement_or_that_writing_needs_a_model():
    for instruction in ("Remember that the launch date is May 4.", "Write a haiku about autumn leaves"):
        first = OfflineResponder().complete(ask(instruction)).text
        after = ask(instruction)
        second = CompletionRequest("reply", after.system, (*after.messages, AIMessage(first)), "m", 512)
        assert OfflineResponder().complete(second).text == NOTHING_TO_ADD, instruction


def test_in_all_hands_it_answers_in_one_line():
    completion = OfflineResponder().complete(ask("Pricing and launch news?", payload={"channel_kind": "all_hands"}))
    assert completion.text.count("\n- ") == 1


def test_a_second_coworker_on_the_same_task_does_not_repeat_the_first():
    first = OfflineResponder().complete(ask("What did we decide about pricing?")).text
    after_mina = ask("What did we decide about pricing?")
    second = OfflineResponder().complete(
        CompletionRequest("reply", after_mina.system, (*after_mina.messages, AIMessage(first)), "m", 512)
    ).text
    assert "$29" in first and second == NOTHING_TO_ADD


def test_its_replies_never_quote_an_earlier_reply_however_long_the_conversation():
    """Each reply goes back into the next prompt (as the builder sends it): every line of every reply
    is something the person said, never a piece of an earlier reply."""
    responder, tasks, replies = OfflineResponder(), [], []
    asks = ["The launch date is May 4.", "When is the launch?", "Remind me of the launch date", "What about the launch?"]
    for turn, said in enumerate(asks * 3, start=1):
        prompt = context.build_prompt(
            context.PromptInputs(policy=Policy(), system=PERSONA, instruction=said, turn=turn, tasks=tuple(tasks))
        )
        request = CompletionRequest(
            purpose="reply", system=prompt.system, messages=prompt.messages, model="m", max_output_tokens=512,
            payload={"turns": prompt.report["detailed_tasks"]},
        )
        reply = responder.complete(request).text
        for line in reply.splitlines()[2:]:
            said, source = re.fullmatch(r"- (.+) \((you said this earlier)\)", line).groups()
            assert said + "." in asks, line
        replies.append(reply)
        tasks.append(TaskRecords(turn=turn, records=(
            record(f"u{turn}", f"a{turn - 1}" if turn > 1 else None, "user", said, turn=turn),
            record(f"a{turn}", f"u{turn}", "assistant", reply, coworker="mina", turn=turn),
        )))
    assert "- The launch date is May 4 (you said this earlier)" in replies[1]


def test_it_never_quotes_the_persona():
    completion = OfflineResponder().complete(ask("Write short copy for Mina"))
    assert "You write short" not in completion.text


def test_it_streams_chunks_that_add_up_to_the_reply():
    chunks: list[str] = []
    completion = OfflineResponder().complete(ask("What did we decide about pricing?"), on_text=chunks.append)
    assert len(chunks) > 10
    assert "".join(chunks) == completion.text
    assert completion.stop_reason == "end_turn"


def test_it_stops_mid_stream_with_the_partial_text():
    full = OfflineResponder().complete(ask("What did we decide about pricing?")).text
    chunks: list[str] = []
    completion = OfflineResponder().complete(
        ask("What did we decide about pricing?"), on_text=chunks.append, should_stop=lambda: len(chunks) >= 3
    )
    assert completion.stop_reason == "stopped"
    assert completion.text == "".join(chunks)
    assert len(completion.text) < len(full) and full.startswith(completion.text)


# Every way an offline reply opens: what it found, that it has nothing, that writing needs a model,
# the acknowledgement of a request to remember or forget, or of news the person states.
OPENINGS = (
    NOTHING_YET, NOTHING_YET_ZH, FOUND, FOUND_ZH, NEEDS_A_MODEL, NEEDS_A_MODEL_ZH, NOTHING_TO_REMEMBER, "我看不出",
    "Noted: ", "Okay, I'll forget ", "記下了：", "好的，我會忘記", NOTED, NOTED_ZH, THANKS, THANKS_ZH,
)


@given(st.text(min_size=1, max_size=200).filter(str.strip))
def test_every_offline_reply_is_short_deterministic_and_streams_whole(instruction):
    chunks: list[str] = []
    completion = OfflineResponder().complete(ask(instruction), on_text=chunks.append)
    assert completion.text.startswith(OPENINGS)
    assert len(completion.text) < 1_200
    assert "".join(chunks) == completion.text
    assert OfflineResponder().complete(ask(instruction)).text == completion.text


def test_it_reports_offline_usage_without_cache_tokens():
    request = ask("What did we decide about pricing?")
    usage = OfflineResponder().complete(request).usage
    assert usage.input_tokens > estimate_tokens(MEMORY)
    assert usage.output_tokens > 0
    assert usage.cache_read_tokens == usage.cache_write_tokens == 0


WRITE_DOCUMENT = ToolSpec(
    name="write_document",
    description="Write or replace an office document.",
    parameters={"type": "object", "properties": {"title": {"type": "string"}, "content": {"type": "string"}}},
)


def test_it_saves_a_stub_document_when_asked_to_write_one():
    completion = OfflineResponder().complete(ask("Write a spec called “Launch checklist”", tools=(WRITE_DOCUMENT,)))
    assert completion.stop_reason == "tool_use"
    assert completion.text == "I'm saving a stub document called “Launch checklist” with your instruction in it."
    (call,) = completion.tool_calls
    assert call.name == "write_document"
    assert call.args["title"] == "Launch checklist"
    assert "Write a spec called" in call.args["content"]


def test_it_reports_the_tool_result_after_a_tool_call():
    call = {"name": "write_document", "args": {"title": "Launch checklist"}, "id": "offline_1", "type": "tool_call"}
    request = CompletionRequest(
        purpose="reply",
        system=(PERSONA,),
        messages=(
            HumanMessage("Write a spec called Launch checklist"),
            AIMessage("Saving it.", tool_calls=[call]),
            ToolMessage("Saved “Launch checklist” (version 1).\nSecond line.", tool_call_id="offline_1"),
        ),
        model="offline-test",
        max_output_tokens=512,
        tools=(WRITE_DOCUMENT,),
    )
    completion = OfflineResponder().complete(request)
    assert completion.tool_calls == () and completion.stop_reason == "end_turn"
    assert "- Saved “Launch checklist” (version 1). / Second line." in completion.text
    assert "write_document" not in completion.text, "a person reads what was done, not the tool's name"


# --- the offline responder: background purposes -------------------------------------


def test_it_folds_tasks_into_a_sectioned_summary():
    payload = {"previous": "", "tasks": [pricing_task()], "max_chars": 2_000, "multi_speaker": False}
    request = CompletionRequest("fold", ("Summarize.",), (HumanMessage("Fold these tasks."),), "m", 1_000, payload=payload)
    completion = OfflineResponder().complete(request)
    assert completion.text == summarize_extractively("", [pricing_task()], max_chars=2_000, multi_speaker=False)
    assert f"## {SECTIONS[0]}" in completion.text and "$29" in completion.text
    assert completion.model == "offline", "what the fold is labelled with"


def test_a_fold_leaves_out_the_replies_given_offline():
    decided_by_reply = TaskRecords(turn=3, records=(
        record("u", None, "user", "Pricing for the Pro plan?", turn=3),
        record("a", "u", "assistant", "We decided on $29 per month for the Pro plan.", coworker="mina", turn=3),
    ))
    payload = {"previous": "", "tasks": [decided_by_reply], "max_chars": 2_000, "multi_speaker": False}
    fold = lambda **extra: OfflineResponder().complete(  # noqa: E731
        CompletionRequest("fold", ("Summarize.",), (HumanMessage("Fold."),), "m", 1_000, payload={**payload, **extra})
    ).text
    assert "$29" in fold(), "a model's reply is summarized"
    assert "$29" not in fold(answered_offline=[3])


def test_it_extracts_memory_candidates_as_json():
    request = CompletionRequest(
        "extract", ("Extract.",), (HumanMessage("Extract facts."),), "m", 1_000, payload={"task": pricing_task()}
    )
    candidates = json.loads(OfflineResponder().complete(request).text)
    assert candidates and all(set(c) == {"text", "kind"} for c in candidates)
    assert any("$29" in c["text"] for c in candidates)


def test_it_extracts_memory_from_what_people_said_never_from_an_offline_reply():
    task = TaskRecords(turn=4, records=(
        record("u", None, "user", "What should the tagline be?", turn=4),
        record("a", "u", "assistant", "We agreed to go with “Plan less, do more” as the tagline.", coworker="mina", turn=4),
    ))
    extract = lambda **extra: json.loads(OfflineResponder().complete(  # noqa: E731
        CompletionRequest("extract", ("Extract.",), (HumanMessage("Extract."),), "m", 1_000, payload={"task": task, **extra})
    ).text)
    assert extract() != [], "a model's stated decision is remembered"
    assert extract(answered_offline=True) == []


COWORKERS = [
    {"slug": "mina", "name": "Mina", "role": "Marketing lead", "skills": ["copywriting", "campaigns"]},
    {"slug": "theo", "name": "Theo", "role": "Engineer", "skills": ["python", "infrastructure"]},
]


def route(instruction: str, channel_kind: str = "main") -> list[str]:
    payload = {"instruction": instruction, "coworkers": COWORKERS, "channel_kind": channel_kind}
    request = CompletionRequest("route", ("Route.",), (HumanMessage(instruction),), "m", 100, payload=payload)
    return json.loads(OfflineResponder().complete(request).text)


def test_it_routes_by_role_and_skills():
    assert route("Our python deploy script keeps failing") == ["theo"]
    assert route("Plan the spring campaign") == ["mina"]
    assert route("Can Theo look at this?") == ["theo"]


def test_it_routes_to_someone_in_main_and_to_nobody_in_all_hands_when_nothing_matches():
    assert route("Good morning everyone") == ["mina"]
    assert route("Good morning everyone", channel_kind="all_hands") == []
