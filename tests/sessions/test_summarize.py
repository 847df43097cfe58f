import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessions.history import Record, TaskRecords, ToolCall
from sessions.summarize import COMMITMENTS, SECTIONS, classify, content_words, parse_summary, summarize_extractively, topic_label, without_vocative


def task(turn: int, *specs: tuple) -> TaskRecords:
    """A task from (role, content) or (role, content, extra fields); assistants are Mina unless named."""
    records = []
    for index, (role, content, *extra) in enumerate(specs):
        fields = dict(extra[0]) if extra else {}
        if role != "user":
            fields.setdefault("coworker", "mina")
        records.append(Record(id=f"t{turn}-{index}", previous=None, turn=turn, role=role, content=content, **fields))
    return TaskRecords(turn=turn, records=tuple(records))


def chatter(turn: int) -> TaskRecords:
    return task(turn, ("user", "Thanks!"), ("assistant", "You're welcome! Let me know if you need anything else."))


def section(summary: str, name: str) -> str:
    match = re.search(rf"^## {re.escape(name)}\n(.*?)(?=\n\n## |\Z)", summary, re.S | re.M)
    return match.group(1) if match else ""


def fold(previous: str, *tasks: TaskRecords, max_chars: int = 6000, multi_speaker: bool = False) -> str:
    return summarize_extractively(previous, tasks, max_chars=max_chars, multi_speaker=multi_speaker)


PRICING = task(
    3,
    ("user", "Hi Mina! What should the Team plan cost?"),
    ("assistant", "We decided to price the Team plan at $29/month. Because it undercuts Rival at $35."),
)


def test_it_keeps_a_decision_made_in_task_3_through_20_folds_of_chatter():
    summary = fold("", task(1, ("user", "Plan the launch"), ("assistant", "Launch plan ready.")), PRICING)

    for batch in range(20):
        summary = fold(summary, *(chatter(4 + batch * 4 + i) for i in range(4)), max_chars=1500)

    assert "(task 3) We decided to price the Team plan at $29/month. Because it undercuts Rival at $35." in section(
        summary, "Decisions"
    )
    assert "welcome" not in summary.lower()


def test_it_records_prices_and_deadlines_but_not_greetings():
    summary = fold(
        "",
        task(
            5,
            ("user", "Hello! Thanks for yesterday. The launch is on May 4 and the price is $29."),
            ("assistant", "Sure, here you go! I'll send the final launch email by May 1."),
        ),
    )

    assert "$29" in section(summary, "Facts and numbers")
    assert "May 4" in section(summary, "Facts and numbers")
    assert "(task 5, Mina) I'll send the final launch email by May 1." in section(summary, "Commitments and next steps")
    assert "hello" not in summary.lower() and "here you go" not in summary.lower()


def test_it_writes_sections_in_order_with_a_task_reference_on_every_bullet():
    summary = fold(
        "",
        task(1, ("user", "Draft the launch email. Which day works best?"), ("assistant", "Done, 120 words.")),
        PRICING,
        task(4, ("user", "Prepare the press kit"), ("assistant", "I'll finish the press kit by Friday.")),
    )

    headings = re.findall(r"^## (.+)$", summary, re.M)
    assert headings == [name for name in SECTIONS if name in headings]
    for line in summary.splitlines():
        assert line == "" or line.startswith("## ") or re.match(r"- (\(tasks? \d+|Tasks? \d+)", line), line


def test_it_drops_an_open_question_once_it_is_answered():
    summary = fold(
        "",
        task(1, ("user", "Should we offer an annual plan?"), ("assistant", "I'm not sure yet, let me think.")),
    )
    assert "annual plan" in section(summary, "Open questions")

    answer = "Drafted. The annual plan is $290/year, two months free."
    summary = fold(summary, task(2, ("user", "Draft the pricing page"), ("assistant", answer)))

    assert section(summary, "Open questions") == ""
    assert "$290" in section(summary, "Facts and numbers")


def test_it_keeps_a_question_answered_in_the_same_task_out_of_open_questions():
    summary = fold("", task(1, ("user", "What price did we agree?"), ("assistant", "We agreed on $29 per month.")))

    assert section(summary, "Open questions") == ""
    assert 'asked "What price did we agree?"' in section(summary, "Topics covered")


def test_a_request_is_the_tasks_topic_not_a_fact_or_an_open_question():
    summary = fold(
        "",
        task(1, ("user", "Please put together an agenda for Monday's planning meeting."), ("assistant", "Here it is.")),
        task(2, ("user", "Can you look into venues for the offsite?"), ("assistant", "Three options: Maple Hall, the Old Mill, Lakeview.")),
        task(3, ("user", "幫我整理星期一規劃會議的議程。"), ("assistant", "好的，議程在這。")),
    )

    facts = section(summary, "Facts and numbers")
    assert "agenda" not in facts and "議程" not in facts
    assert "Three options: Maple Hall" in facts, "what the reply said still is one"
    assert section(summary, "Open questions") == "", "asked for and answered"
    topics = section(summary, "Topics covered")
    assert "agenda for Monday's planning meeting" in topics and "venues for the offsite" in topics


def test_a_reply_that_says_the_request_back_is_summarized_by_its_answer():
    summary = fold(
        "",
        task(1, ("user", "Make a list from today's standup."),
             ("assistant", "You'd like me to make a list from today's standup — the list: ship v2 on May 4, fix login.")),
        task(2, ("user", "整理今天站會的重點。"), ("assistant", "所以你是要我整理今天站會的重點——簡單說：5月4日上線。")),
    )

    assert "You'd like me" not in summary and "你是要我" not in summary
    assert "The list: ship v2 on May 4, fix login." in section(summary, "Facts and numbers")
    assert "簡單說：5月4日上線。" in section(summary, "Facts and numbers")


def test_a_question_that_is_all_the_person_said_is_answered_by_its_reply_in_any_words():
    summary = fold(
        "",
        task(1, ("user", "Any news from HR this week?"), ("assistant", "Yes: Ravi Menon signed and starts April 1.")),
        task(2, ("user", "人資這週有什麼消息嗎？"), ("assistant", "有：周子軒已經簽約，4月15日開始上班。")),
        task(3, ("user", "Who is on call this weekend?"), ("assistant", "I'm not sure yet, let me check the rota.")),
    )

    assert section(summary, "Open questions") == "- (task 3) Who is on call this weekend?"


def test_a_reply_that_says_the_request_back_without_a_dash_is_kept_whole_and_nothing_yet_is_no_answer():
    summary = fold(
        "",
        task(1, ("user", "Can you check the Lisbon hotel?"),
             ("assistant", "You want me to check the Lisbon hotel: it's the Pestana, booked for May 4 at $180 a night.")),
        task(2, ("user", "Any news from HR?"), ("assistant", "Nothing yet on my side, still waiting for Ravi.")),
    )

    assert "Pestana, booked for May 4 at $180" in summary
    assert "Any news from HR?" in section(summary, "Open questions")


def test_it_keeps_the_newest_decision_and_drops_the_oldest_fact_first_over_budget():
    tasks = [
        task(1, ("user", "The old logo used 3 colours and 2 fonts."), ("assistant", "Noted the 3 colours.")),
        task(2, ("user", "We decided to keep the blue logo."), ("assistant", "Blue logo it is.")),
        task(3, ("user", "The landing page has 4 sections."), ("assistant", "Four sections, got it.")),
        task(4, ("user", "We decided the Team plan costs $29/month."), ("assistant", "Agreed: $29/month.")),
    ]
    full = fold("", *tasks)

    for budget in range(100, len(full) + 1, 7):
        summary = fold("", *tasks, max_chars=budget)
        assert len(summary) <= budget
        assert "We decided the Team plan costs $29/month." in summary
        facts = section(summary, "Facts and numbers")
        if "3 colours and 2 fonts" in facts:
            assert "4 sections" in facts  # the older fact never outlives the newer one
    assert "3 colours and 2 fonts" not in section(fold("", *tasks, max_chars=len(full) // 2), "Facts and numbers")


def test_it_shortens_old_bullets_before_dropping_any():
    long_fact = "The survey of 1,200 customers found that " + "most want simpler onboarding and clearer pricing " * 3
    decision = "We decided to launch on May 4 because the press is free."
    tasks = [task(1, ("user", long_fact)), task(2, ("user", decision))]
    full = fold("", *tasks)

    summary = fold("", *tasks, max_chars=len(full) - 60)

    assert "(task 1) The survey of 1,200 customers" in summary and "…" in summary
    assert "We decided to launch on May 4 because the press is free." in summary


def test_it_keeps_the_newest_decision_even_when_the_budget_holds_little_else():
    tasks = [task(n, ("user", f"We decided on option {n} for the launch checklist item {n}.")) for n in range(1, 8)]

    summary = fold("", *tasks, max_chars=90)

    assert len(summary) <= 90
    assert "(task 7)" in summary and "## Decisions" in summary


PIECES = [
    "We decided to price the Team plan at $29/month.", "I'll send the draft by Friday.", "Should we add a FAQ?",
    "The launch is on May 4.", "Thanks!", "Draft the launch email", "Revenue grew 45% to 4,000 users.",
    "我們決定定價為每月 29 美元。", "預算是多少？", "我會在週五前完成。", "Because it is cheaper.", "\n- ", " ",
]
# Random text rarely looks like a conversation; sentences built from these reach every compression step.
TEXT = st.one_of(st.text(max_size=300), st.lists(st.sampled_from(PIECES), max_size=12).map("".join))


@settings(max_examples=150)
@given(
    previous=st.one_of(st.text(max_size=600), st.lists(st.sampled_from(PIECES), max_size=30).map("\n- ".join)),
    contents=st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool", "notice"]), TEXT), max_size=12),
    max_chars=st.integers(min_value=0, max_value=1500),
    multi=st.booleans(),
)
def test_it_never_exceeds_max_chars(previous, contents, max_chars, multi):
    tasks = [task(n + 1, (role, text)) for n, (role, text) in enumerate(contents)]

    summary = fold(previous, *tasks, max_chars=max_chars, multi_speaker=multi)

    assert len(summary) <= max_chars
    full = fold(previous, *tasks, max_chars=10**6, multi_speaker=multi)
    if len(full) <= max_chars:
        assert summary == full
    elif max_chars >= 250:
        assert summary  # compressed, never emptied while a shortened bullet would fit
    again = fold(summary, max_chars=max_chars)
    assert len(again) <= max_chars


def test_it_writes_chinese_conversations_as_chinese_bullets_in_the_right_sections():
    summary = fold(
        "",
        task(
            1,
            ("user", "請幫我規劃發佈。我們決定定價為每月 29 美元。預算是多少？"),
            ("assistant", "好的！發佈日是5月4日。我會在週五前完成新聞稿。", {"coworker": "theo"}),
        ),
        multi_speaker=True,
    )

    assert "(task 1, you) 我們決定定價為每月 29 美元。" in section(summary, "Decisions")
    assert "(task 1, Theo) 發佈日是5月4日。" in section(summary, "Facts and numbers")
    assert "(task 1, Theo) 我會在週五前完成新聞稿。" in section(summary, "Commitments and next steps")
    assert "預算是多少？" in section(summary, "Open questions")
    assert "好的" not in summary


def test_in_chinese_a_day_or_a_decision_word_alone_is_not_a_commitment_or_a_decision():
    summary = fold(
        "",
        task(
            1,
            ("user", "好，明天再聊。"),
            ("assistant", "這是本週最好的消息，大家都很開心。雅婷需要在明天前決定新手引導的文案。"),
        ),
        task(2, ("user", "我們決定錄取蔡宗霖。"), ("assistant", "我會在週五前寄出錄取通知。")),
    )

    commitments, decisions = section(summary, "Commitments and next steps"), section(summary, "Decisions")
    assert "明天再聊" not in commitments and "本週最好的消息" not in commitments
    assert "需要在明天前決定" not in decisions, "a decision still to be made"
    assert "我們決定錄取蔡宗霖。" in decisions
    assert "我會在週五前寄出錄取通知。" in commitments


def test_it_keeps_the_bullets_of_the_summary_it_updates():
    previous = fold("", PRICING, task(4, ("user", "Review the FAQ"), ("assistant", "Reviewed; 12 questions.")))

    updated = fold(previous, task(5, ("user", "Design the hero image"), ("assistant", "Here it is: 1200x600.")))

    for line in previous.splitlines():
        if line.startswith("- "):
            assert line in updated
    assert "Task 5: designed the hero image" in updated


def test_it_updates_a_model_written_summary_without_losing_its_points():
    previous = (
        "Some background prose.\n### Key decisions\n* Launch moved to May 11.\n\n**Next steps**\n1. Mina drafts the FAQ."
    )

    sections = parse_summary(fold(previous, PRICING))

    assert [b.body for b in sections["Decisions"]][0] == "Launch moved to May 11."
    assert "Mina drafts the FAQ." in [b.body for b in sections["Commitments and next steps"]]
    assert "Some background prose." in [b.body for b in sections["Topics covered"]]


def test_it_names_speakers_only_in_multi_speaker_channels_except_owners():
    convo = task(
        2,
        ("user", "@theo fix the signup bug by Friday"),
        ("assistant", "We agreed to ship the fix in 2 days.", {"coworker": "theo"}),
    )

    single = fold("", convo)
    multi = fold("", convo, multi_speaker=True)

    assert "(task 2) We agreed to ship the fix in 2 days." in single
    assert "(task 2, Theo) We agreed to ship the fix in 2 days." in multi
    # The user's request is Theo's commitment, in any channel.
    assert "(task 2, Theo) Fix the signup bug by Friday" in single, "said to Theo: his, without the @"
    assert "Task 2 (Theo): fixed the signup bug by Friday" in multi


def test_it_writes_finished_work_in_past_tense_and_merges_a_run_of_tasks_on_one_topic():
    tasks = [
        task(5, ("user", "Draft the launch email"), ("assistant", "Draft one.")),
        task(6, ("user", "Make the launch email shorter"), ("assistant", "Draft two.")),
        task(7, ("user", "Thanks!"), ("assistant", "Welcome.")),
        task(8, ("user", "Polish the launch email subject line"), ("assistant", "Draft three.")),
        task(9, ("user", "Compare our prices with Rival's"), ("assistant", "Rival is $35; we are $29.")),
        task(10, ("user", "Brainstorm taglines")),  # no answer yet: not written as done
    ]

    topics = section(fold("", *tasks), "Topics covered")

    assert topics.splitlines() == [
        "- Tasks 5–8: drafted the launch email",
        "- Task 9: compared our prices with Rival's",
        "- Task 10: Brainstorm taglines (unfinished)",
    ]


def test_it_never_takes_facts_from_tool_results():
    summary = fold(
        "",
        task(
            1,
            ("user", "Read the Q3 report"),
            ("assistant", "", {"tool_calls": (ToolCall("c1", "read_document", {"title": "Q3"}),)}),
            ("tool", "We decided to cut the budget to $1,000,000. Revenue grew 45%.", {"tool_call_id": "c1"}),
            ("assistant", "Music has the most views."),
        ),
    )

    assert "$1,000,000" not in summary and "45%" not in summary
    assert section(summary, "Topics covered") == "- Task 1: read the Q3 report (used read_document)"


def test_topic_labels_in_other_forms():
    assert topic_label("Could you please write a blog post, about 500 words?", finished=True) == "wrote a blog post"
    assert topic_label("Pricing for the Team plan", finished=True) == "worked on pricing for the Team plan"
    assert topic_label("麻煩你整理會議紀錄", finished=True) == "處理「整理會議紀錄」"
    assert topic_label("Thanks!", finished=True) == ""


def test_a_coworker_reporting_its_own_work_is_not_listed_as_a_decision():
    from sessions.history import Record, TaskRecords

    task = TaskRecords(
        turn=23,
        records=(
            Record(id="u", previous=None, turn=23, role="user", content="I decided we price the Team plan at $29. Update the page."),
            Record(id="a", previous="u", turn=23, role="assistant", content="I put the Team plan price we agreed into the pricing page copy.", coworker="theo"),
        ),
    )
    summary = summarize_extractively("", [task], max_chars=2_000, multi_speaker=True)
    decisions = summary.split("## Decisions")[1].split("##")[0]

    assert "$29" in decisions
    assert "I put" not in decisions


# Conversations between people: small talk around the work


def friends(turn: int, said: str, answer: str) -> TaskRecords:
    return task(turn, ("user", said), ("assistant", answer, {"coworker": "mel"}))


SMALL_TALK = [
    ("Hey Mel! How are you?", "Hey Caroline! I'm good, thanks. How are you?"),
    ("Thanks Mel, you too!", "Anytime! Talk soon."),
    ("Good morning! How's it going?", "Great, thanks for asking!"),
]
WORK = [
    ("Can you compare the offsite venue options?", "Lakeview Lodge fits 40 people; the offsite venue in town fits 30."),
    ("What is the catering budget for the offsite?", "The catering budget is $2,000 for the offsite."),
    ("I talked to the caterer about the catering budget.", "Good, the caterer can work within the catering budget of $2,000."),
]


def small_talk_and_work(blocks: int) -> list[TaskRecords]:
    out: list[TaskRecords] = []
    for block in range(blocks):
        for said, answer in (SMALL_TALK[block % 3], WORK[block % 3]):
            out.append(friends(len(out) + 1, said, answer))
    return out


def test_topics_of_small_talk_and_work_name_the_work_never_the_greetings():
    tasks = small_talk_and_work(20)
    summary = ""
    for start in range(0, len(tasks), 4):  # folded four at a time, as the app does
        summary = fold(summary, *tasks[start : start + 4], max_chars=600)

    lines = section(summary, "Topics covered").splitlines()
    assert len(lines) >= 3, summary  # ranges, not one line for everything
    for line in lines:
        assert re.match(r"- Tasks? \d+(–\d+)?: ", line), line
        assert not re.search(r"\b(?:hey|hi|thanks|how are you|good morning|mel|caroline)\b", line, re.I), line
    assert all("offsite" in line or "catering" in line for line in lines)
    assert sum("catering budget" in line for line in lines) >= len(lines) - 1


def test_a_range_of_topics_names_what_recurs_in_it():
    tasks = small_talk_and_work(12)

    summary = fold("", *tasks, max_chars=400)

    first = section(summary, "Topics covered").splitlines()[0]
    assert re.match(r"- Tasks 2–\d+: ", first), first
    assert "offsite venue" in first and "catering budget" in first


def test_a_task_of_greetings_only_has_no_topic_and_no_bullets():
    summary = fold("", friends(1, "Hey Mel! How are you? It's been a while.", "Hey Caroline! Good to see you. Thanks!"))

    assert summary == ""


def test_acknowledgements_and_pleasantries_make_no_bullets_but_personal_specifics_do():
    summary = fold(
        "",
        friends(1, "Agreed, Caroline. I'll let you know!", "See you tomorrow!"),
        friends(2, "I've been reading 'Becoming Nicole' lately.", "That's so cool! My daughter starts school in September."),
        friends(3, "We picked Lakeview Lodge for the offsite.", "Sounds good! I'll book Lakeview Lodge by Friday."),
    )

    assert "Agreed" not in summary and "let you know" not in summary and "See you" not in summary
    assert "(task 2) I've been reading 'Becoming Nicole' lately." in section(summary, "Facts and numbers")
    assert "My daughter starts school in September." in section(summary, "Facts and numbers")
    assert "(task 3) We picked Lakeview Lodge for the offsite." in section(summary, "Decisions")
    assert "I'll book Lakeview Lodge by Friday." in section(summary, "Commitments and next steps")
    topics = section(summary, "Topics covered")
    assert "Becoming Nicole" in topics and "Task 1" not in topics


def test_it_does_not_pad_the_budget_with_chatter():
    tasks = [friends(n, "Haha, so true! How are you?", "I'm great, thanks! Talk soon, Caroline.") for n in range(1, 40)]
    tasks.append(friends(40, "The offsite is at Lakeview Lodge on May 4.", "Great, see you there!"))

    summary = fold("", *tasks, max_chars=6000)

    assert len(summary) < 300, summary
    assert "Lakeview Lodge on May 4" in summary


def test_chinese_small_talk_and_work():
    summary = fold(
        "",
        friends(1, "嗨，梅兒！最近好嗎？", "好的！我很好，謝謝。"),
        friends(2, "同意，卡洛琳。我們決定在湖景山莊舉辦外地會議。", "太好了！外地會議的餐飲預算是兩千元。"),
        friends(3, "我最近在讀《成為妮可》。", "真的嗎？我女兒九月開始上學。"),
    )

    assert "卡洛琳" not in section(summary, "Decisions") and "梅兒" not in summary
    assert "我們決定在湖景山莊舉辦外地會議。" in section(summary, "Decisions")
    assert "外地會議的餐飲預算是兩千元。" in section(summary, "Facts and numbers")
    assert "我最近在讀《成為妮可》。" in section(summary, "Facts and numbers")
    topics = section(summary, "Topics covered")
    assert "Task 1" not in topics and "成為妮可" in topics


def test_within_a_tasks_places_the_sentences_with_specifics_win():
    answer = " ".join(f"Haha, {n} times!" for n in range(1, 7)) + " The Lakeview Lodge deposit of $500 was paid on May 1."

    facts = section(fold("", friends(1, "How did the call go?", answer)), "Facts and numbers")

    assert "The Lakeview Lodge deposit of $500 was paid on May 1." in facts
    assert len(facts.splitlines()) == 5


_CHAT = ["Thanks!", "Agreed, Caroline.", "Sounds good!", "See you tomorrow!", "I'll let you know!", "How are you?",
         "That.", "Haha, me too!", "Wow Mel, that's stunning!", "Yeah Mel, stoked!", "謝謝梅兒，你也是！", "同意，卡洛琳。", "好的！", "最近好嗎？", "Please remember that."]


@settings(max_examples=100)
@given(
    contents=st.lists(
        st.tuples(st.sampled_from(["user", "assistant"]), st.lists(st.sampled_from(_CHAT + PIECES), max_size=6).map(" ".join)),
        max_size=10,
    ),
)
def test_every_bullet_names_something(contents):
    summary = fold("", *(task(n + 1, (role, text)) for n, (role, text) in enumerate(contents)))

    for name, bullets in parse_summary(summary).items():
        for bullet in bullets:
            assert content_words(bullet.body) or name == "Topics covered" and bullet.body.startswith("asked"), bullet
            assert bullet.body not in _CHAT
            what = re.sub(r"^(?:talked about|asked|聊到「)\W*", "", bullet.body)
            assert not re.match(r"(?:hey|thanks|how are you|agreed|sounds good|see you|wow|yeah)\b|謝謝|卡洛琳|梅兒|同意", what, re.I)


def test_a_summary_full_of_facts_keeps_an_outline_of_topic_ranges():
    subjects = ["launch email", "pricing page", "hiring plan", "investor update", "support macros", "press kit"]
    tasks = [
        task(n, ("user", f"Draft the {subjects[n % 6]} for week {n}."), ("assistant", f"Done: {n * 7} words, {n} sections, dated May {n % 28 + 1}."))
        for n in range(1, 121)
    ]
    summary = ""
    for start in range(0, len(tasks), 4):
        summary = fold(summary, *tasks[start : start + 4], max_chars=3000)

    lines = section(summary, "Topics covered").splitlines()
    assert len(lines) >= 5, summary
    assert lines[0].startswith("- Tasks 1–") and any(subject in lines[0] for subject in subjects)


def test_a_reply_given_again_is_one_bullet_even_after_the_old_one_was_shortened_to_fit():
    status = "I'll send the weekly status to finance every Friday, with the open invoices and the overdue ones listed by customer and amount."
    shortened = f"## Commitments and next steps\n- (task 1, Mina) {status[:60].rstrip()}…"

    summary = fold(shortened, task(9, ("user", "Status, please"), ("assistant", status)))

    commitments = section(summary, "Commitments and next steps")
    assert commitments.count("weekly status") == 1, commitments
    assert "(task 9, Mina)" in commitments


@pytest.mark.parametrize(
    "said, meant",
    [
        ("Yeah Mel, stoked!", "stoked!"),
        ("Wow Mel, that painting is stunning!", "that painting is stunning!"),
        ("Agreed, Caroline.", "Agreed"),
        # Names that are what the sentence is about stay.
        ("We moved to Great Britain.", "We moved to Great Britain."),
        ("The venue is the Great Hall.", "The venue is the Great Hall."),
        ("It was a great Christmas!", "It was a great Christmas!"),
        ("Make sure Dana, Lee and Sam are invited.", "Make sure Dana, Lee and Sam are invited."),
        ("It was a nice Tuesday, so we hiked.", "It was a nice Tuesday, so we hiked."),
        ("Team: the beta goes live on Friday.", "the beta goes live on Friday."),
        ("Budget: $40,000 for the launch.", "Budget: $40,000 for the launch."),
    ],
)
def test_only_the_name_a_sentence_is_said_to_is_taken_out(said, meant):
    assert without_vocative(said) == meant


def test_a_chinese_topic_phrase_is_whole_words_never_a_word_cut_in_two():
    from sessions.summarize import key_phrases

    # At most six characters: the first whole words ("頻道" is not cut to "頻").
    assert "擬一則團隊" in key_phrases("幫我擬一則團隊頻道的公告")
    assert not any(phrase.endswith("頻") for phrase in key_phrases("幫我擬一則團隊頻道的公告"))


def test_a_meeting_note_of_a_name_to_do_something_is_a_commitment():
    assert classify("Sam to check with our top 3 customers.") == COMMITMENTS
    assert classify("Mina and Omar to draft the launch brief.") == COMMITMENTS
    for said in ("Welcome to the team.", "Nice to meet you all.", "Thanks to everyone for coming.", "Back to work."):
        assert classify(said) is None, said
