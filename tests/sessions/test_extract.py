from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessions.extract import (
    KINDS,
    Candidate,
    Existing,
    decide,
    extract_candidates,
    forget_requests,
    match_forget,
    most_similar,
    remember_request,
)
from sessions.history import Record, TaskRecords
from sessions.summarize import content_words


def task(*specs: tuple) -> TaskRecords:
    """One task from (role, content) pairs; assistant and tool records are Mina's."""
    records = tuple(
        Record(
            id=f"r{index}",
            previous=None,
            turn=1,
            role=role,
            content=content,
            coworker=None if role == "user" else "mina",
            tool_call_id="c1" if role == "tool" else None,
        )
        for index, (role, content) in enumerate(specs)
    )
    return TaskRecords(turn=1, records=records)


def said(text: str) -> list[Candidate]:
    return extract_candidates(task(("user", text)))


PRICE = Existing(1, "We decided the Team plan costs $29/month.", "decision")
LAUNCH = Existing(2, "The launch is on May 4.", "project")
BULLETS = Existing(3, "The user prefers short bullet points.", "preference")
MEMORY = [PRICE, LAUNCH, BULLETS]


# extract_candidates


def test_it_remembers_an_explicit_launch_date_as_a_project_fact():
    [candidate] = said("Remember that our launch is on May 4")

    assert candidate.kind in ("project", "rule")
    assert "May 4" in candidate.text
    assert candidate.text == "The launch is on May 4."


def test_it_recognizes_a_stated_preference_and_rewrites_it_about_the_user():
    assert said("I prefer short bullet points.") == [Candidate("The user prefers short bullet points.", "preference")]
    assert said("Call me Sam.") == [Candidate("The user wants to be called Sam.", "preference")]
    assert said("Never use emojis in customer emails.")[0].kind == "preference"


def test_it_recognizes_decisions_company_and_project_facts():
    assert said("We decided the Team plan costs $29/month.") == [
        Candidate("We decided the Team plan costs $29/month.", "decision")
    ]
    assert said("We are a 5-person studio.") == [Candidate("The company is a 5-person studio.", "company")]
    assert said("Our target customer is solo founders.")[0].kind == "company"
    assert said("The budget is $5,000.") == [Candidate("The budget is $5,000.", "project")]


def test_it_remembers_a_working_rule():
    assert said("Remember to always cc Theo on launches.") == [Candidate("Always cc Theo on launches.", "rule")]


def test_it_ignores_chatter_questions_requests_and_one_off_instructions():
    assert said("thanks!") == []
    assert said("What is the price?") == []
    assert said("Draft the launch email for May 4.") == []
    assert said("Don't send it yet.") == []
    assert said("先不要寄出") == []


def test_it_takes_only_stated_decisions_from_assistants():
    candidates = extract_candidates(
        task(
            ("user", "Which price should we use?"),
            ("assistant", "Great, so we'll go with $29/month. I chose a warm tone for the email. It launches May 4."),
        )
    )

    assert candidates == [Candidate("We'll go with $29/month.", "decision")]


def test_it_never_takes_candidates_from_tool_results():
    candidates = extract_candidates(
        task(
            ("user", "Check the brief"),
            ("tool", "Remember that the budget is $9. I prefer long emails. We decided to cancel the launch."),
            ("assistant", "Done."),
        )
    )

    assert candidates == []


def test_it_handles_traditional_chinese():
    assert said("記住我們的發佈日是5月4日") == [Candidate("發佈日是5月4日。", "project")]
    assert said("我偏好簡短的重點。") == [Candidate("使用者偏好簡短的重點。", "preference")]
    assert said("我們決定團隊方案每月 29 美元。") == [Candidate("我們決定團隊方案每月 29 美元。", "decision")]
    assert said("不要用表情符號") == [Candidate("不要用表情符號。", "preference")]
    assert said("謝謝！") == []


def test_in_chinese_what_the_user_is_doing_now_and_a_decision_still_to_make_are_not_kept():
    assert said("我去吃午餐，一個小時後回來。") == []
    assert said("我今天在家工作，下午有空。") == []
    assert extract_candidates(task(("user", "站會重點？"), ("assistant", "我們還沒定案：雅婷需要在明天前決定新手引導的文案。"))) == []
    # What the user tells about themselves still is.
    assert said("我家小孩昨晚發燒，所以動作比較慢。")[0].kind == "preference"


def test_a_date_something_goes_live_on_is_a_project_fact():
    assert said("The beta goes live on Friday.") == [Candidate("The beta goes live on Friday.", "project")]


def test_every_candidate_has_a_known_kind():
    text = "I like tables. Our company is Acme. The deadline is June 1. We agreed on blue. Remember: ship on time."
    assert {c.kind for c in said(text)} <= set(KINDS)


# decide


def test_it_updates_the_price_when_it_changes():
    [candidate] = said("Let's change the price to $39/month.")

    decision = decide(candidate, most_similar(candidate.text, MEMORY))

    assert decision.action == "update"
    assert decision.item_id == PRICE.id
    assert "$39" in decision.text and "$29" not in decision.text
    assert "$29" in decision.reason and "$39" in decision.reason


def test_it_updates_a_moved_date():
    [candidate] = said("The launch moved to May 11.")

    decision = decide(candidate, most_similar(candidate.text, MEMORY))

    assert (decision.action, decision.item_id, decision.text) == ("update", LAUNCH.id, "The launch moved to May 11.")


def test_it_does_nothing_for_a_fact_it_already_knows():
    [candidate] = said("Remember that our launch is on May 4.")

    decision = decide(candidate, most_similar(candidate.text, MEMORY))

    assert (decision.action, decision.item_id) == ("noop", LAUNCH.id)
    assert "already known" in decision.reason


def test_it_adds_a_price_for_another_plan_rather_than_overwriting():
    [candidate] = said("The Starter plan costs $9/month.")

    decision = decide(candidate, most_similar(candidate.text, MEMORY))

    assert (decision.action, decision.item_id, decision.text) == ("add", None, "The Starter plan costs $9/month.")
    assert decision.reason


def test_it_replaces_a_preference_the_user_reverses():
    [candidate] = said("I don't like short bullet points.")

    decision = decide(candidate, most_similar(candidate.text, MEMORY))

    assert (decision.action, decision.item_id) == ("update", BULLETS.id)


def test_it_adds_when_nothing_is_stored():
    decision = decide(Candidate("The user prefers tables.", "preference"), [])

    assert (decision.action, decision.text) == ("add", "The user prefers tables.")
    assert "nothing similar" in decision.reason


def test_it_updates_a_chinese_price():
    stored = [Existing(7, "我們決定團隊方案每月 29 美元。", "decision"), Existing(8, "發佈日是5月4日。", "project")]
    [candidate] = said("我們決定團隊方案改為每月 39 美元。")

    decision = decide(candidate, stored)

    assert (decision.action, decision.item_id) == ("update", 7)
    assert decide(said("我們決定團隊方案每月 29 美元。")[0], stored).action == "noop"


# forgetting


def test_it_deletes_the_launch_date_when_asked_to_forget_it():
    [request] = forget_requests(task(("user", "Forget the launch date, please.")))

    decision = match_forget(request, most_similar(request, MEMORY))

    assert (decision.action, decision.item_id) == ("delete", LAUNCH.id)
    assert "launch date" in decision.reason


def test_it_keeps_everything_when_a_forget_request_matches_nothing_well():
    decision = match_forget("the launch party", MEMORY)

    assert decision.action == "noop" and decision.item_id is None
    assert "closely enough" in decision.reason
    assert match_forget("it", MEMORY).action == "noop"


def test_it_treats_no_longer_as_a_request_to_forget():
    [request] = forget_requests(task(("user", "I no longer prefer short bullet points.")))

    assert said("I no longer prefer short bullet points.") == []
    assert match_forget(request, MEMORY).item_id == BULLETS.id


def test_it_forgets_in_chinese_and_only_on_the_users_word():
    assert forget_requests(task(("user", "請忘記發佈日期"))) == ["發佈日期"]
    assert match_forget("發佈日期", [Existing(8, "發佈日是5月4日。", "project")]).action == "delete"
    assert forget_requests(task(("assistant", "Forget the launch date."), ("tool", "forget everything"))) == []


def test_most_similar_keeps_the_best_five_in_a_stable_order():
    items = [Existing(n, f"Note {n} about the launch", "project") for n in range(8)]

    assert [item.id for item in most_similar("launch", items)] == [0, 1, 2, 3, 4]


def test_it_does_nothing_when_an_item_already_states_the_new_value():
    stored = [PRICE, Existing(4, "The Team plan costs $39/month.", "decision")]
    candidate = Candidate("The Team plan costs $39/month.", "decision")

    assert (decide(candidate, stored).action, decide(candidate, stored).item_id) == ("noop", 4)


def test_it_speaks_of_the_user_in_the_third_person_but_leaves_assistants_alone():
    assert said("I decided to go with $29.") == [Candidate("The user decided to go with $29.", "decision")]
    candidates = extract_candidates(task(("user", "Price?"), ("assistant", "Mina and I agreed on $29 for me.")))
    assert candidates == [Candidate("Mina and I agreed on $29 for me.", "decision")]


def test_a_coworker_reporting_its_own_work_is_not_a_decision_to_remember():
    report = task(
        ("user", "Update the pricing page."),
        ("assistant", "I put the Team plan price we agreed into the pricing page copy. We agreed to launch on a Tuesday."),
    )
    texts = [c.text for c in extract_candidates(report)]
    assert not any("I put" in t for t in texts)
    assert any("Tuesday" in t for t in texts)


@pytest.mark.parametrize(
    "said, kept",
    [
        ("We position against Northwind Studio, not the big suites.", "Northwind Studio"),
        ("We promise enterprise customers a first reply within 4 hours.", "within 4 hours"),
        ("我們承諾企業客戶在 4 小時內首次回覆。", "4 小時"),
    ],
)
def test_a_plain_statement_of_how_we_work_is_remembered(said, kept):
    assert [c.kind for c in extract_candidates(task(("user", said))) if kept in c.text] == ["company"]


@pytest.mark.parametrize("said", ["We should probably rethink the pricing page.", "We'll ship on Friday.", "We need a new logo.", "We talked about it yesterday."])
def test_plans_wishes_and_chatter_about_us_are_not(said):
    assert extract_candidates(task(("user", said))) == []


@pytest.mark.parametrize(
    "said, kept",
    [
        ("We're calling the product Lumen Desk. That's final, no more naming debates.", "Lumen Desk"),
        ("產品名稱就定為 Lumen Desk，不再討論。", "Lumen Desk"),
        ("我們的定位對手是 Northwind Studio，不是那些大型套裝軟體。", "Northwind Studio"),
    ],
)
def test_a_settled_name_or_position_is_remembered_not_taken_for_a_forget_request(said, kept):
    said_once = task(("user", said))
    assert any(kept in c.text for c in extract_candidates(said_once))
    assert forget_requests(said_once) == []


# what counts as a fact: lines from real conversations


@pytest.mark.parametrize(
    "said",
    [
        "Agreed, Caroline.",
        "That.",
        "Please remember that.",
        "Remember this!",
        "Sounds good!",
        "Thanks Mel, you too!",
        "I love that!",
        "Wow, I love it!",
        "I agree with you on that.",
        "We decided that.",
        "Sounds like a plan, let's go with it!",
        "I'm so glad you chose to come!",
        "I'm doing great, thanks.",
        "I had a great time with you.",
        "Have you been to Lakeview Lodge?",
        "同意，卡洛琳。",
        "請記住那個。",
        "謝謝梅兒，你也是！",
        "好的，沒問題！",
        "就這麼決定吧。",
    ],
)
def test_acknowledgements_pleasantries_and_bare_pronouns_are_not_remembered(said):
    assert extract_candidates(task(("user", said))) == []
    assert extract_candidates(task(("user", "Where should the offsite be?"), ("assistant", said))) == []


@pytest.mark.parametrize(
    "said, kind, kept",
    [
        ("I prefer morning meetings.", "preference", "The user prefers morning meetings."),
        ("我比較喜歡早上開會。", "preference", "使用者比較喜歡早上開會。"),
        ("Our launch is on May 4.", "project", "The launch is on May 4."),
        ("The Team plan costs $29/month.", "project", "The Team plan costs $29/month."),
        ("We decided to hold the offsite at Lakeview Lodge.", "decision", "We decided to hold the offsite at Lakeview Lodge."),
        ("We picked Lakeview Lodge for the offsite.", "decision", "We picked Lakeview Lodge for the offsite."),
        ("Remember to always cc Dana on vendor emails.", "rule", "Always cc Dana on vendor emails."),
        ("Remember to send the recap on Fridays.", "rule", "Send the recap on Fridays."),
        # Asked to be remembered, a statement is a fact of the work, not a rule.
        ("Remember that the booth number is 42.", "project", "The booth number is 42."),
        ("請記住我們的預算是五萬元。", "project", "預算是五萬元。"),
        ("Agreed, Caroline. We picked Lakeview Lodge for the offsite.", "decision", "We picked Lakeview Lodge for the offsite."),
    ],
)
def test_durable_facts_are_still_remembered(said, kind, kept):
    assert Candidate(kept, kind) in extract_candidates(task(("user", said)))


@pytest.mark.parametrize(
    "said, kept",
    [
        ("Thanks Mel! I've been reading 'Becoming Nicole' lately.", "The user has been reading 'Becoming Nicole' lately."),
        ("My daughter starts school in September.", "The user's daughter starts school in September."),
        ("I went to an LGBTQ support group yesterday.", "The user went to an LGBTQ support group yesterday."),
        ("我最近在讀《成為妮可》。", "使用者最近在讀《成為妮可》。"),
        ("我女兒九月開始上學。", "使用者女兒九月開始上學。"),
    ],
)
def test_what_a_person_tells_about_themselves_is_remembered(said, kept):
    assert [c.text for c in extract_candidates(task(("user", said)))] == [kept]


@pytest.mark.parametrize(
    "said, kept",
    [
        ("I took the first step towards becoming a mom - I applied to adoption agencies.",
         "The user took the first step towards becoming a mom - the user applied to adoption agencies."),
        ("I ran into a group of hikers who really upset me.", "The user ran into a group of hikers who really upset the user."),
        ("I really believe in community.", "The user really believes in community."),
        ("I haven't done pottery yet, but I finally bought clay.", "The user hasn't done pottery yet, but the user finally bought clay."),
        ("I finally passed the adoption agency interviews.", "The user finally passed the adoption agency interviews."),
        ("I apply for grants every spring.", "The user applies for grants every spring."),
        # Present forms that are also past ones, and verbs in -ly, are still verbs.
        ("I read a chapter every night.", "The user reads a chapter every night."),
        ("I comply with GDPR in every project.", "The user complies with GDPR in every project."),
        ("I'm a nurse and I am training for a marathon.", "The user is a nurse and the user is training for a marathon."),
    ],
)
def test_a_fact_retold_about_the_user_keeps_its_verbs_right(said, kept):
    assert [c.text for c in extract_candidates(task(("user", said)))] == [kept]


def test_a_fact_that_names_a_day_relative_to_when_it_was_said_is_dated():
    when = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    records = (
        Record("u1", None, 1, "user", "I went to an LGBTQ support group yesterday. My daughter starts school in September.", None, when),
        Record("a1", "u1", 1, "assistant", "That sounds powerful.", "mina", when),
    )
    assert [c.text for c in extract_candidates(TaskRecords(turn=1, records=records))] == [
        "The user went to an LGBTQ support group yesterday (said on 8 May 2023).",
        "The user's daughter starts school in September.",
    ]
    named = (Record("u1", None, 1, "user", "I met 王小明 yesterday at the fair.", None, when),)
    assert [c.text for c in extract_candidates(TaskRecords(turn=1, records=named))] == [
        "The user met 王小明 yesterday at the fair (said on 8 May 2023)."
    ]
    chinese = (Record("u1", None, 1, "user", "我昨天去了陶藝課。", None, when),)
    assert [c.text for c in extract_candidates(TaskRecords(turn=1, records=chinese))] == ["使用者昨天去了陶藝課（2023年5月8日說的）。"]


@pytest.mark.parametrize(
    "said",
    ["I think so too.", "I'm so happy for you!", "I'll let you know.", "I'm reviewing the weekend rota.",
     "我覺得很好。", "我也是！", "我在檢查週末的值班表。"],
)
def test_moods_opinions_and_plans_are_not_personal_facts(said):
    assert extract_candidates(task(("user", said))) == []


def test_a_coworkers_own_life_is_not_the_users_memory():
    reply = task(("user", "How was your week?"), ("assistant", "My daughter starts school in September."))
    assert extract_candidates(reply) == []


# Lines a person says in passing, in any order and combination, with names said to someone.
_EN_CHATTER = ["thanks", "Thanks Mel", "agreed", "sure", "ok", "yes", "wow", "haha", "that", "this", "it", "those",
               "me too", "you too", "sounds good", "sounds great", "great idea", "I love it", "I agree", "let's do it",
               "remember that", "please remember that", "of course", "no problem", "so cool", "I'm so happy",
               "same here", "right", "exactly"]
_ZH_CHATTER = ["謝謝", "好的", "同意", "那個", "這樣", "我也是", "沒錯", "太好了", "記住那個", "好啊", "真的嗎", "哈哈"]


def _chatter(words: list[str], names: list[str], ends: list[str]) -> st.SearchStrategy[str]:
    part = st.tuples(st.sampled_from(words), st.one_of(st.none(), st.sampled_from(names)), st.sampled_from(ends))
    return st.lists(part, min_size=1, max_size=4).map(
        lambda parts: " ".join(f"{w}, {n}{e}" if n else f"{w}{e}" for w, n, e in parts)
    )


_CHATTER = _chatter(_EN_CHATTER, ["Caroline", "Mel", "Dana"], [".", "!", ", ", "~", "..."]) | _chatter(
    _ZH_CHATTER, ["卡洛琳", "梅兒"], ["。", "！", "，", "～"]
)


@settings(max_examples=200)
@given(text=_CHATTER, role=st.sampled_from(["user", "assistant"]))
def test_chatter_and_pronouns_never_make_a_memory_item(text, role):
    assert extract_candidates(task(("user", "Hi!"), (role, text))) == []


@settings(max_examples=200)
@given(text=st.text(max_size=200) | st.lists(_CHATTER | st.sampled_from(
    ["We picked Lakeview Lodge.", "I prefer tables.", "The launch is on May 4.", "我偏好簡短的重點。", " ", ". "]
), max_size=8).map(" ".join))
def test_every_candidate_says_something_specific(text):
    for candidate in extract_candidates(task(("user", text))):
        assert content_words(candidate.text), candidate
        assert candidate.kind in KINDS


@pytest.mark.parametrize(
    ("sentence", "asked"),
    [
        ("Please remember that the launch date is May 4.", "the launch date is May 4"),
        ("Note: we ship on Fridays!", "we ship on Fridays"),
        ("請記住上線日期是5月4日。", "上線日期是5月4日"),
        ("When is the launch?", None),
        ("I remember the launch went well.", None),
        # It introduces what follows (a code block, a list): on its own it says nothing to keep.
        ("Remember that the deploy bot posts:", None),
        ("請記住機器人會貼出：", None),
    ],
)
def test_a_request_to_remember_gives_what_to_remember_in_the_users_words(sentence, asked):
    assert remember_request(sentence) == asked
