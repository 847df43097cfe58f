"""Deterministic long conversations for bench_recall: days of work and small talk, and questions about old details.

Pure: standard library and sessions.history only (no Django, no ORM, no strategies).

A conversation is a chain of history Records over several days ("sessions") spread
over weeks. Most tasks are filler: greetings, weather, coffee, thanks, routine work,
some with a tool call. Between them sit the details a person later asks about:
venues for events, budgets, who interviewed whom, books people lent or recommended,
trips and hotels, vendors. Each kind has several entities (distractors), some values
change later (the latest is the answer; the old mention is not evidence), and the
coworker often restates what was said, in other words, so a question is never simply
the words of its answer.

Each question names its evidence: the exact records whose content answers it.
`single` asks for one detail, `multi_hop` needs two facts said on different days,
`temporal` asks by date or by order ("before the change"), `paraphrased` shares
few content words with its evidence.
"""

from __future__ import annotations

import random
import re
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone

from sessions.history import Record, ToolCall

LANGUAGES = ("en", "zh")
KINDS = ("single", "multi_hop", "temporal", "paraphrased")
COWORKER = "mina"
START = date(2026, 1, 5)  # a Monday
# The fewest tasks a conversation holds: every detail and its distractors need room.
MIN_TASKS = 100


@dataclass(frozen=True)
class Question:
    """A question asked after the whole conversation, and the records that answer it."""

    key: str
    kind: str
    text: str
    answer: str
    evidence: tuple[str, ...]  # record ids, in the order they were said


@dataclass(frozen=True)
class Day:
    """One session: a date and the turns (of the whole conversation) said on it."""

    date: date
    first_turn: int
    last_turn: int


@dataclass(frozen=True)
class RecallConversation:
    records: tuple[Record, ...]
    days: tuple[Day, ...]
    questions: tuple[Question, ...]
    language: str = "en"

    @property
    def n_tasks(self) -> int:
        return self.records[-1].turn if self.records else 0

    def record(self, record_id: str) -> Record:
        return self._by_id[record_id]

    @property
    def _by_id(self) -> dict[str, Record]:
        cached = self.__dict__.get("_index")
        if cached is None:
            cached = {record.id: record for record in self.records}
            object.__setattr__(self, "_index", cached)
        return cached

    def day_of(self, record_id: str) -> int:
        """The index of the day (session) a record was said on."""
        turn = self.record(record_id).turn
        return next(i for i, day in enumerate(self.days) if day.first_turn <= turn <= day.last_turn)

    def session_records(self) -> list[tuple[Record, ...]]:
        """Each day as a session of its own: turns counted from 1, the chain starting afresh."""
        sessions = []
        for day in self.days:
            chunk = [r for r in self.records if day.first_turn <= r.turn <= day.last_turn]
            offset = day.first_turn - 1
            sessions.append(
                tuple(
                    Record(
                        id=r.id,
                        previous=None if i == 0 else r.previous,
                        turn=r.turn - offset,
                        role=r.role,
                        content=r.content,
                        coworker=r.coworker,
                        created_at=r.created_at,
                        tool_calls=r.tool_calls,
                        tool_call_id=r.tool_call_id,
                    )
                    for i, r in enumerate(chunk)
                )
            )
        return sessions


# Text -------------------------------------------------------------------------
#
# Each language has the same entities in the same order, so the English and the
# Chinese conversation of a seed have the same shape. Templates are str.format
# strings; {x} slots are filled from the entity tables.

_EN: dict = {
    "events": [  # key, name, paraphrase (no word of the name or of the decision templates)
        ("offsite", "the offsite", "the team retreat"),
        ("holiday", "the holiday party", "the year-end celebration"),
        ("dinner", "the client dinner", "the evening out with our customers"),
        ("launch", "the launch party", "the release celebration"),
    ],
    "venues": ["Harbor Loft", "Maple Hall", "the Copper Kettle", "Riverside Pavilion", "the Old Mill",
               "Lantern House", "Skyline Terrace", "Greenhouse on Fifth", "Juniper Rooms", "the Glass Barn",
               "Birch Court", "the Salt Cellar"],
    "venue_ask": [
        "Can you look into venues for {event}? We'll be about {n} people.",
        "We still need a venue for {event}, roughly {n} of us. Any ideas?",
    ],
    "venue_options": "I looked at three options. {a} seats {n} comfortably and has a projector; {b} is the cheapest but a long walk from the station; {c} is lovely but only free on weekends. My pick would be {a}, but {b} works if money is tight.",
    "venue_decide": [
        "Let's book {venue} for {event}. The terrace there is lovely and it's easy to get to by train.",
        "I've made up my mind: {event} will be at {venue}. Their set menu fits what we wanted.",
        "Go ahead and reserve {venue} for {event}, please. I liked the photos of the main room.",
    ],
    "venue_decide_reply": [
        "Great choice. I'll send {venue} the booking request today and hold the date in everyone's calendar.",
        "Done: the request to {venue} is out, and I've put a placeholder in the shared calendar so nobody double-books.",
    ],
    "venue_update": [
        "Bad news: {old} double-booked us, so {event} is moving to {new}. Please fix the invite.",
        "Change of plan for {event}: we're switching from {old} to {new}, because the first place can't do vegetarian food.",
    ],
    "venue_update_reply": "Oh no. I've changed the invite to {new} and posted a note in the team channel so people don't go to {old}.",
    "q_venue": "Where are we having {event}?",
    "q_venue_para": "Which spot did we end up going with for {para}?",
    "q_venue_before": "Before the change of plans, which place had we reserved for {event}?",
    "items": [  # key, name, paraphrase
        ("booth", "the trade fair booth", "our stand at the expo"),
        ("video", "the promo video shoot", "filming the product ad"),
        ("training", "the leadership training", "the course for our managers"),
        ("laptops", "the new laptops", "replacing everyone's computers"),
    ],
    "budget_set": [
        "For {item} we have {money} to work with; please keep it under that.",
        "Quick note on {item}: the ceiling is {money}, not a cent more.",
    ],
    "budget_set_reply": "Understood, I'll keep {item} within {money} and flag anything that looks like it will run over.",
    "budget_quote_user": "Did the vendors send numbers for {item} yet?",
    "budget_quote": "One quote came in for {item} at {money}, and another vendor said they'd send theirs next week.",
    "budget_update_user": "Did finance get back to you about {item}?",
    "budget_update": "Yes, finance replied this morning: they approved {money} for {item}, so that's our new limit.",
    "q_budget": "What's the budget for {item} at this point?",
    "q_budget_para": "How much are we allowed to spend on {para}?",
    "q_budget_date": "On {date}, what spending cap did I give you for {item}?",
    "roles": [("backend", "backend engineer"), ("designer", "product designer"), ("support", "support lead")],
    "candidates": ["Daniel Okafor", "Mei Tanaka", "Lucas Ferreira", "Hannah Weiss", "Omar Haddad", "Sofia Rossi",
                   "Jonas Berg", "Aisha Khan", "Ravi Menon"],
    "colleagues": ["Priya", "Marco", "Grace", "Tom", "Lena", "Hugo", "Nadia", "Felix"],
    "interview": [
        "{who} interviewed {cand} for the {role} role yesterday and liked how calmly {cand} talked through the take-home.",
        "Heads up: {who} did the second interview with {cand} ({role}) and thought the portfolio was strong but the references were thin.",
        "{who} spoke with {cand} this morning about the {role} job. Good energy, a bit junior on the systems questions.",
    ],
    "interview_reply": "Thanks, I'll add that to the hiring notes so we can compare once all the {role} interviews are done.",
    "offer": "We're going with {cand} for the {role} position. Can you draft the offer letter?",
    "offer_reply": "Here is a first draft. Dear {cand}, we are delighted to offer you the position of {role} at our company. You will work closely with the product team and report to the head of the department. The package we discussed includes the salary, the usual benefits and a learning budget for courses and books. Please let us know by the end of next week whether you accept; we are happy to answer any questions about the role or the team before then. I kept the tone warm and short; tell me if you want the salary figure in the letter itself or in a separate note.",
    "start_user": "Any news from HR this week?",
    "start": "Yes: {cand} signed the contract and will start on {start}. HR is getting the laptop and badge ready.",
    "q_interviewer": "Who interviewed {cand}?",
    "q_interview_date": "On {date}, which candidate had {who} talked to?",
    "q_start": "When does our new {role} start?",
    "books": [("Thinking in Systems", "Donella Meadows"), ("The Culture Map", "Erin Meyer"), ("Range", "David Epstein"),
              ("Deep Work", "Cal Newport"), ("The Mom Test", "Rob Fitzpatrick"), ("Four Thousand Weeks", "Oliver Burkeman")],
    "recommend": "{who} recommended {title} over lunch, saying it changed how their team runs meetings.",
    "recommend_reply": "Nice, that one comes up a lot. If you read it, I'd be curious what you think of the middle chapters.",
    "lend": "{who} lent me a copy of {title}, I'm on chapter three already.",
    "lend_reply": "That's kind! Enjoy it; weekends are the best time for a book like that.",
    "author": "Funny thing, I looked up {title} last night: {author} wrote it after years of teaching.",
    "author_reply": "I didn't know that either. It explains why the examples feel so practical.",
    "q_recommend": "Which book did {who} recommend?",
    "q_author": "Who wrote the book {who} lent me?",
    "trips": [("Berlin", "Hotel Amano"), ("Lisbon", "the Pestana Palace"), ("Osaka", "Cross Hotel")],
    "trip": "{who} is flying to the {city} fair next month and will run the booth there.",
    "trip_reply": "Good to know. I'll add {city} to the travel sheet so finance can pre-approve the flights.",
    "hotel_user": "Did you manage to sort out rooms for {city}?",
    "hotel": "Yes, the rooms for {city} are booked at {hotel}, five minutes from the exhibition halls, breakfast included.",
    "q_hotel": "Which hotel will {who} stay at?",
    "vendors": [("catering", "catering for the Friday lunches", "bringing food in at the end of each week"),
                ("cleaning", "the office cleaning", "keeping our floors and desks spotless"),
                ("printing", "printing the brochures", "producing the paper leaflets")],
    "vendor_names": [["Brightline Kitchen", "Fresh Fork", "Green Table"], ["Tidy Co", "Sparkle Services", "Clearview"],
                     ["InkWorks", "PaperJam Print", "Northside Press"]],
    "vendor_quotes_user": "Can you compare the quotes for {category}?",
    "vendor_quotes": "Three quotes so far for {category}: {a} is {m1}, {b} is {m2} and {c} is {m3}. {b} has the best reviews, {a} the shortest contract.",
    "vendor_sign": "Let's sign with {vendor} for {category}; their samples were the best of the lot.",
    "vendor_sign_reply": "I'll tell {vendor} today and send the other two a polite no.",
    "q_vendor": "Which company did we pick for {category}?",
    "q_vendor_para": "Who ended up being hired for {para}?",
    "money": "${value:,}",
    "date": "{weekday}, {month} {day}",
    "weekdays": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "months": ["January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December"],
    "small_talk": [
        ("Morning! The coffee machine on the third floor is finally fixed.",
         "Good morning! That is the best news of the week; the queue at the café downstairs was getting silly."),
        ("It's pouring again, so I'm working from home today.",
         "Stay dry! Nothing on today's list needs you in the office."),
        ("Thanks!", "You're welcome, shout if anything else comes up."),
        ("Thanks, that's perfect.", "Glad it helps."),
        ("Had a lovely weekend hiking up by the lake, my legs are sore.",
         "That sounds wonderful. A sore-legs Monday is a good kind of Monday. Did the weather hold up?"),
        ("Yes, sunny both days. Anyway, back to work.", "Back to work it is. I'm here when you need me."),
        ("Ugh, the train was late again.", "Sorry to hear it. Grab a coffee first; nothing urgent is waiting."),
        ("Happy Friday!", "Happy Friday! Any plans for the weekend?"),
        ("Just a quiet one, maybe a movie.", "Sounds perfect after this week."),
        ("Is it just me or is the office freezing today?", "Not just you. Facilities said the heating gets looked at this afternoon."),
        ("I'm going to grab lunch, back in an hour.", "Enjoy your lunch!"),
        ("Good morning, how are you?", "Good morning! All well here, ready when you are."),
        ("Sorry, I was in meetings all morning.", "No problem at all. I kept a short list of what came in while you were away."),
        ("The new plants in the kitchen look great.", "They really brighten the place up. Someone said they need watering twice a week."),
        ("My kid had a fever last night so I'm a bit slow today.", "Sorry to hear that, I hope they feel better soon. I'll keep things light today."),
        ("Ok.", "Noted."),
        ("Let me think about it and get back to you.", "Of course, take your time."),
        ("Great, talk tomorrow.", "Talk tomorrow! Have a good evening."),
    ],
    "work": [
        ("Can you draft a reply to {who} about moving our weekly sync to Thursdays?",
         "Here's a draft: Hi {who}, would Thursdays at ten work better for the weekly sync? Tuesdays keep clashing with the planning call. Happy to keep Tuesday if Thursday is hard for you."),
        ("Summarize the notes from this morning's standup, please.",
         "Short version: the release checklist is mostly done, two bugs are still open, and {who} needs a decision on the onboarding copy by tomorrow."),
        ("Remind me what's left on the onboarding checklist.",
         "Three things are left: the welcome email, the sample project and the short video. The email is the quickest; the video needs {who}."),
        ("Could you tidy up the wording of the job ad? It sounds stiff.",
         "I rewrote it in plain language, cut the list of requirements from twelve to six and added a line about flexible hours. It reads much warmer now."),
        ("What did the customer survey say about the mobile app?",
         "Mostly positive: people like the offline mode, but many asked for a dark theme and faster search. Complaints about login dropped since the last update."),
        ("Please put together an agenda for Monday's planning meeting.",
         "Agenda: a look back at last month, the roadmap for the next six weeks, open hiring, and any other business. I left fifteen minutes for questions."),
        ("Can you check my calendar for a free hour on Wednesday?",
         "Wednesday has a free hour from two to three; the morning is full of interviews."),
        ("Write a short thank-you note to {who} for covering the support queue.",
         "Here you go: Thanks so much for covering the queue last week, {who}; customers noticed how quickly they heard back. Drinks are on me next time."),
        ("How are we doing on the quarterly goals?",
         "Two of the four goals are on track, one is slightly behind, and the churn goal is at risk: cancellations went up after the price change."),
        ("Draft a short update for the team channel about the new expense tool.",
         "Draft: From next month all expenses go through the new tool. Receipts are photographed in the app, approvals happen in a day, and the old spreadsheet goes away. Questions to {who}."),
        ("Find the latest version of the security policy.",
         "The latest version is the one from last autumn, updated for the password rules; I linked it in the handbook."),
        ("Can you shorten this paragraph for the newsletter?",
         "Shortened to three sentences: the news, why it matters to readers, and where to learn more."),
        ("Who is on call this weekend?", "{who} is on call this weekend, with the usual backup from the platform team."),
        ("Set up a reminder to review the contracts at the end of the month.",
         "Done, a reminder for the last Friday of the month at ten, with the contracts folder attached."),
        ("What are the open questions from the design review?",
         "Two open questions: whether the settings page needs its own tab, and how we show errors on small screens. {who} will bring mockups."),
        ("Make a to-do list from what we discussed today.",
         "Here's the list: send the recap, book the meeting room for Thursday, ask {who} for the numbers, and update the roadmap slide."),
    ],
    "searches": ["meeting notes", "team handbook", "roadmap", "customer feedback", "hiring plan", "travel policy"],
    "search_result": "Found {k} documents: {docs}.",
    "docs": ["Weekly sync notes", "Team handbook", "Roadmap draft", "Customer feedback digest", "Hiring plan",
             "Travel policy", "Expense guide", "Release checklist", "Onboarding checklist", "Design review notes"],
    "search_step": "Let me check the documents first.",
    "extras": [
        "Let me know if you'd like a different tone.",
        "I can turn this into a slide if that helps.",
        "I kept it short on purpose; people skim these.",
        "If anything changes I'll update it straight away.",
        "There's no rush on this one.",
        "I also saved a copy in the shared folder.",
        "Happy to go through it together on a call.",
        "I double-checked the dates against the calendar.",
        "One more thing: the numbers come from last week's export, so they may move a little.",
        "Tell me if I should loop anyone else in.",
    ],
    "chat_extras": [
        "By the way, someone left cinnamon buns in the kitchen this morning.",
        "I hear the forecast says sunshine again by Thursday.",
        "Let me know when you want to pick up the planning again.",
        "The fire drill is on Wednesday at eleven, in case you missed the email.",
        "Nothing else has come in since this morning.",
    ],
    "restate": "So you'd like me to {ask} — ",
    "space": " ",
}

_ZH: dict = {
    "events": [
        ("offsite", "員工共識營", "大家一起去外地開會兩天的活動"),
        ("holiday", "尾牙", "年終的聚餐"),
        ("dinner", "客戶晚宴", "請客人吃飯的那個晚上"),
        ("launch", "上市派對", "新產品發表的慶祝會"),
    ],
    "venues": ["港灣閣樓", "楓葉廳", "銅壺餐廳", "河畔涼亭", "老磨坊", "燈籠會館", "天際露台", "第五街溫室",
               "杜松會所", "玻璃穀倉", "樺樹庭院", "鹽窖酒館"],
    "venue_ask": [
        "可以幫我找{event}的場地嗎？大概會有{n}個人。",
        "{event}的場地還沒定，我們大約{n}個人，你有什麼建議？",
    ],
    "venue_options": "我看了三個選擇。{a}可以坐{n}人，也有投影機；{b}最便宜，但離車站要走很久；{c}很漂亮，不過只有週末有空。我會推薦{a}，如果預算吃緊，{b}也可以。",
    "venue_decide": [
        "{event}就訂在{venue}吧，那邊的露台很漂亮，搭捷運也方便。",
        "我決定了：{event}辦在{venue}，他們的套餐正好符合我們的需求。",
        "麻煩幫我預約{venue}辦{event}，我很喜歡主廳的照片。",
    ],
    "venue_decide_reply": [
        "好選擇！我今天就把預約申請寄給{venue}，並在大家的行事曆上先保留日期。",
        "完成了：已經向{venue}送出申請，也在共用行事曆放了提醒，避免有人撞期。",
    ],
    "venue_update": [
        "壞消息：{old}把我們的時段重複訂了，所以{event}改到{new}。請幫忙更新邀請。",
        "{event}計畫有變：我們從{old}換到{new}，因為原本那家沒辦法準備素食。",
    ],
    "venue_update_reply": "真可惜。我已經把邀請改成{new}，也在團隊頻道發了通知，免得有人跑去{old}。",
    "q_venue": "{event}要在哪裡舉行？",
    "q_venue_para": "{para}最後選了什麼地點？",
    "q_venue_before": "在改變計畫之前，{event}原本預約的是哪裡？",
    "items": [
        ("booth", "展覽攤位", "參展時我們站的那個位置"),
        ("video", "宣傳影片拍攝", "拍產品廣告"),
        ("training", "主管培訓課程", "幫經理們上的課"),
        ("laptops", "新筆電", "換掉大家的電腦"),
    ],
    "budget_set": [
        "{item}的預算是{money}，請控制在這個範圍內。",
        "提醒一下{item}：上限是{money}，一毛都不能多。",
    ],
    "budget_set_reply": "了解，{item}我會控制在{money}以內，看起來要超支時會先跟你說。",
    "budget_quote_user": "{item}的廠商報價來了嗎？",
    "budget_quote": "{item}有一家報價{money}，另一家說下週才會寄來。",
    "budget_update_user": "財務那邊有回覆{item}的事嗎？",
    "budget_update": "有，財務今天早上回信了：{item}核准了{money}，這就是我們新的上限。",
    "q_budget": "{item}現在的預算是多少？",
    "q_budget_para": "{para}可以花多少錢？",
    "q_budget_date": "{date}那天，我給你的{item}花費上限是多少？",
    "roles": [("backend", "後端工程師"), ("designer", "產品設計師"), ("support", "客服主管")],
    "candidates": ["陳冠宇", "林佳慧", "黃柏翰", "張雅琪", "周子軒", "劉思妤", "蔡宗霖", "鄭如萱", "許志豪"],
    "colleagues": ["怡君", "志明", "美玲", "建宏", "雅婷", "家豪", "淑芬", "俊傑"],
    "interview": [
        "{who}昨天面試了應徵{role}的{cand}，很欣賞{cand}冷靜地講解回家作業的方式。",
        "跟你說一下：{who}和{cand}（{role}）進行了第二次面試，覺得作品集很強，但推薦人有點少。",
        "{who}今天早上和{cand}聊了{role}這個職位，很有活力，不過系統設計的問題答得有點生疏。",
    ],
    "interview_reply": "謝謝，我會把這些加進招募筆記，等{role}的面試都結束再一起比較。",
    "offer": "{role}的職位我們決定錄取{cand}。可以幫我擬錄取通知書嗎？",
    "offer_reply": "這是初稿。親愛的{cand}，我們很高興邀請您擔任本公司的{role}。您將與產品團隊密切合作，並向部門主管報告。我們討論過的條件包括薪資、一般福利，以及購買課程和書籍的學習補助。請在下週結束前告訴我們是否接受；在那之前，如果對職位或團隊有任何疑問，我們都很樂意回答。我讓語氣保持溫暖簡短；如果你希望把薪資數字寫在信裡或另外附上，再跟我說。",
    "start_user": "人資這週有什麼消息嗎？",
    "start": "有：{cand}已經簽約，{start}開始上班。人資正在準備筆電和門禁卡。",
    "q_interviewer": "是誰面試了{cand}？",
    "q_interview_date": "{date}那天，{who}和哪一位應徵者談過？",
    "q_start": "我們新的{role}什麼時候開始上班？",
    "books": [("《系統思考》", "唐內拉·梅多斯"), ("《文化地圖》", "艾琳·梅爾"), ("《跨能致勝》", "大衛·艾波斯坦"),
              ("《深度工作力》", "卡爾·紐波特"), ("《媽媽測試》", "羅布·菲茨帕特里克"), ("《人生4千個禮拜》", "奧利佛·柏克曼")],
    "recommend": "{who}午餐時推薦了{title}，說這本書改變了他們團隊開會的方式。",
    "recommend_reply": "不錯，那本常常有人提。如果你讀了，我很想知道你對中間幾章的看法。",
    "lend": "{who}把{title}借給我了，我已經讀到第三章。",
    "lend_reply": "真貼心！好好享受，週末最適合讀這種書。",
    "author": "說來有趣，我昨晚查了一下{title}：{author}是教了很多年書之後才寫的。",
    "author_reply": "我也不知道耶，難怪裡面的例子都那麼實用。",
    "q_recommend": "{who}推薦了哪一本書？",
    "q_author": "{who}借我的那本書是誰寫的？",
    "trips": [("柏林", "阿馬諾飯店"), ("里斯本", "佩斯塔納宮殿酒店"), ("大阪", "大阪十字飯店")],
    "trip": "{who}下個月要飛去{city}的展覽，會負責那邊的攤位。",
    "trip_reply": "了解。我會把{city}加進差旅表，讓財務先核准機票。",
    "hotel_user": "{city}的房間訂好了嗎？",
    "hotel": "訂好了，{city}的房間訂在{hotel}，走路五分鐘就到展覽館，含早餐。",
    "q_hotel": "{who}會住哪一間飯店？",
    "vendors": [("catering", "週五午餐的外燴", "每個禮拜最後一個工作天送吃的來"),
                ("cleaning", "辦公室清潔", "讓地板和桌子保持乾淨"),
                ("printing", "型錄印刷", "做紙本傳單")],
    "vendor_names": [["明亮餐飲", "鮮叉食堂", "綠桌子"], ["整潔公司", "閃亮清潔", "清景服務"], ["墨工坊", "紙堆印刷", "北區印刷廠"]],
    "vendor_quotes_user": "可以幫我比較{category}的報價嗎？",
    "vendor_quotes": "{category}目前有三份報價：{a}是{m1}，{b}是{m2}，{c}是{m3}。{b}的評價最好，{a}的合約最短。",
    "vendor_sign": "{category}就跟{vendor}簽約吧，他們的樣品是所有家裡最好的。",
    "vendor_sign_reply": "我今天就通知{vendor}，也會婉拒另外兩家。",
    "q_vendor": "{category}我們選了哪一家公司？",
    "q_vendor_para": "{para}這件事交給了哪一家？",
    "money": "新台幣{value:,}元",
    "date": "{month}月{day}日（{weekday}）",
    "weekdays": ["星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日"],
    "months": [str(m) for m in range(1, 13)],
    "small_talk": [
        ("早安！三樓的咖啡機終於修好了。", "早安！這是本週最好的消息，樓下咖啡店的隊伍已經排得太誇張了。"),
        ("又在下大雨，我今天在家工作。", "小心別淋濕！今天的事情都不需要進辦公室。"),
        ("謝謝！", "不客氣，有其他事再叫我。"),
        ("謝謝，這樣很好。", "很高興有幫上忙。"),
        ("週末去湖邊爬山，很開心，腿好痠。", "聽起來很棒。腿痠的星期一是好的星期一。天氣還好嗎？"),
        ("兩天都是晴天。好啦，回來工作。", "好，回來工作。需要我的時候說一聲。"),
        ("唉，火車又誤點了。", "辛苦了。先去喝杯咖啡吧，沒有急事在等你。"),
        ("週五快樂！", "週五快樂！週末有什麼計畫嗎？"),
        ("就在家休息，可能看部電影。", "忙完這週，這樣剛剛好。"),
        ("是我的錯覺嗎？今天辦公室好冷。", "不是錯覺。總務說今天下午會來檢查暖氣。"),
        ("我去吃午餐，一個小時後回來。", "用餐愉快！"),
        ("早安，你好嗎？", "早安！這邊一切都好，隨時可以開始。"),
        ("抱歉，我整個早上都在開會。", "完全沒問題。你不在的時候進來的事情，我整理了一份短清單。"),
        ("茶水間的新盆栽看起來很棒。", "真的讓空間亮了起來。聽說它們一週要澆兩次水。"),
        ("我家小孩昨晚發燒，所以我今天動作比較慢。", "辛苦了，希望孩子早日康復。今天我會讓事情輕鬆一點。"),
        ("好。", "收到。"),
        ("讓我想一下再回覆你。", "當然，慢慢來。"),
        ("好，明天再聊。", "明天見！祝你有個愉快的晚上。"),
    ],
    "work": [
        ("可以幫我擬一封回信給{who}，說每週例會改到星期四嗎？",
         "這是草稿：{who}你好，每週例會改到星期四早上十點可以嗎？星期二一直和規劃會議撞期。如果星期四不方便，維持星期二也沒問題。"),
        ("請幫我整理今天早上站會的重點。", "簡單說：上線檢查表大致完成，還有兩個錯誤沒修，{who}需要在明天前決定新手引導的文案。"),
        ("提醒我新人報到清單還剩什麼。", "還剩三件：歡迎信、範例專案和短片。歡迎信最快，短片需要{who}幫忙。"),
        ("可以幫我修一下徵才文案的用字嗎？讀起來太生硬了。", "我改成白話的說法，把條件從十二項減到六項，並加了一句彈性工時的說明，讀起來親切多了。"),
        ("顧客問卷對手機版 App 有什麼看法？", "大多是正面的：大家喜歡離線模式，但很多人要求深色主題和更快的搜尋。上次更新後，登入的抱怨變少了。"),
        ("請幫我準備星期一規劃會議的議程。", "議程：回顧上個月、接下來六週的路線圖、招募進度，以及其他事項。最後留了十五分鐘提問。"),
        ("可以看一下我星期三哪裡有空一小時嗎？", "星期三下午兩點到三點有空，早上都排滿了面試。"),
        ("幫我寫一張簡短的感謝卡給{who}，謝謝他支援客服。", "給你：{who}，非常感謝你上週幫忙處理客服，客戶都注意到回覆變快了。下次我請喝一杯。"),
        ("我們的季度目標進度如何？", "四個目標有兩個進度正常，一個稍微落後，流失率的目標有風險：調價之後取消的人變多了。"),
        ("幫我擬一則團隊頻道的公告，介紹新的報帳工具。", "草稿：從下個月起，所有報帳都改用新工具。收據用 App 拍照，一天內完成核准，舊的試算表就不用了。有問題請找{who}。"),
        ("幫我找最新版的資安規範。", "最新版是去年秋天更新密碼規則的那一份，我已經放在員工手冊的連結裡。"),
        ("可以幫我把電子報的這一段縮短嗎？", "縮成三句：消息本身、對讀者的意義，以及去哪裡看更多。"),
        ("這個週末誰值班？", "這個週末是{who}值班，平台團隊照常支援。"),
        ("幫我設個提醒，月底要審合約。", "設好了，月底最後一個星期五早上十點提醒，附上合約資料夾。"),
        ("設計審查還有哪些問題沒解決？", "還有兩個：設定頁要不要獨立分頁，以及小螢幕上的錯誤訊息怎麼顯示。{who}會帶設計稿來。"),
        ("把我們今天討論的事情列成待辦清單。", "清單在這：寄出會議摘要、預約星期四的會議室、跟{who}要數字、更新路線圖投影片。"),
    ],
    "searches": ["會議紀錄", "員工手冊", "產品路線圖", "客戶回饋", "招募計畫", "差旅規定"],
    "search_result": "找到 {k} 份文件：{docs}。",
    "docs": ["每週例會紀錄", "員工手冊", "路線圖草稿", "客戶回饋摘要", "招募計畫", "差旅規定", "報帳指南",
             "上線檢查表", "新人報到清單", "設計審查紀錄"],
    "search_step": "我先查一下文件。",
    "extras": [
        "如果想換個語氣再跟我說。", "需要的話我可以做成一張投影片。", "我刻意寫得很短，大家通常只會掃過去。",
        "有任何變動我會馬上更新。", "這件事不急。", "我也在共用資料夾存了一份。", "很樂意找時間一起過一遍。",
        "日期我已經和行事曆核對過了。", "還有一點：數字來自上週的匯出，可能會有些微變動。", "要不要找其他人一起討論，跟我說一聲。",
    ],
    "chat_extras": [
        "對了，今天早上有人在茶水間放了肉桂捲。", "聽說氣象預報星期四又會出太陽。", "想繼續討論規劃的時候跟我說。",
        "星期三早上十一點有消防演習，以免你沒看到信。", "今天早上到現在沒有其他新的事情。",
    ],
    "restate": "所以你是要我{ask}——",
    "space": "",
}

_TEXT = {"en": _EN, "zh": _ZH}


# Building ---------------------------------------------------------------------


@dataclass
class _Task:
    """A task before it becomes records: what the user says, the reply, and an optional tool round."""

    user: str
    reply: str
    tag: str = ""  # names the task for the questions ("venue:offsite:decide")
    tool: tuple[str, dict, str] | None = None  # (name, args, result)
    after: tuple[str, ...] = ()  # tags that must be said on an earlier day
    day: int = -1


@dataclass
class _Plan:
    tasks: list[_Task] = field(default_factory=list)
    questions: list[tuple[str, str, str, str, tuple[tuple[str, str], ...]]] = field(default_factory=list)
    # (key, kind, text, answer, ((tag, "user"|"reply"), ...))

    def add(self, task: _Task) -> _Task:
        self.tasks.append(task)
        return task

    def ask(self, key: str, kind: str, text: str, answer: str, *evidence: tuple[str, str]) -> None:
        self.questions.append((key, kind, text, answer, evidence))


class _Maker:
    def __init__(self, n_tasks: int, language: str, seed: int) -> None:
        if language not in _TEXT:
            raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}")
        if n_tasks < MIN_TASKS:
            raise ValueError(f"a recall conversation needs at least {MIN_TASKS} tasks, got {n_tasks}")
        self.n = n_tasks
        self.language = language
        self.t = _TEXT[language]
        self.rng = random.Random(f"bench-recall:{seed}:{language}:{n_tasks}")
        # Ids from their own stream: the text does not change if id generation does.
        self.ids = random.Random(f"bench-recall-ids:{seed}:{language}:{n_tasks}")
        self.plan = _Plan()

    def money(self, low: int, high: int, unit: int) -> str:
        """An amount in the language's currency (NT$ about 30 to the dollar)."""
        value = self.rng.randrange(low, high) * unit
        return self.t["money"].format(value=value * (30 if self.language == "zh" else 1))

    def pick(self, pool: list, k: int) -> list:
        return self.rng.sample(pool, k)

    # The details -------------------------------------------------------------

    def venues(self) -> None:
        t, plan = self.t, self.plan
        venues = list(t["venues"])
        self.rng.shuffle(venues)
        for i, (key, event, para) in enumerate(t["events"]):
            a, b, c = venues[3 * i : 3 * i + 3]
            n = self.rng.randint(15, 90)
            plan.add(_Task(self.rng.choice(t["venue_ask"]).format(event=event, n=n),
                           t["venue_options"].format(a=a, b=b, c=c, n=n + 10), f"venue:{key}:ask",
                           tool=("search_documents", {"query": event}, _options_result(t, a, b, c))))
            chosen = self.rng.choice((a, b))
            plan.add(_Task(self.rng.choice(t["venue_decide"]).format(venue=chosen, event=event),
                           self.rng.choice(t["venue_decide_reply"]).format(venue=chosen), f"venue:{key}:decide",
                           after=(f"venue:{key}:ask",)))
            latest = f"venue:{key}:decide"
            if i % 2 == 0:  # half the events move later: the first booking is no longer the answer
                new = c if chosen != c else a
                plan.add(_Task(self.rng.choice(t["venue_update"]).format(event=event, old=chosen, new=new),
                               t["venue_update_reply"].format(new=new, old=chosen), f"venue:{key}:update",
                               after=(latest,)))
                plan.ask(f"venue:{key}:before", "temporal", t["q_venue_before"].format(event=event), chosen,
                         (latest, "user"))
                latest, chosen = f"venue:{key}:update", new
            plan.ask(f"venue:{key}", "single", t["q_venue"].format(event=event), chosen, (latest, "user"))
            plan.ask(f"venue:{key}:para", "paraphrased", t["q_venue_para"].format(para=para), chosen, (latest, "user"))

    def budgets(self) -> None:
        t, plan = self.t, self.plan
        for i, (key, item, para) in enumerate(t["items"]):
            first = self.money(40, 400, 100)
            plan.add(_Task(self.rng.choice(t["budget_set"]).format(item=item, money=first),
                           t["budget_set_reply"].format(item=item, money=first), f"budget:{key}:set"))
            quote = self.money(40, 400, 100)
            plan.add(_Task(t["budget_quote_user"].format(item=item), t["budget_quote"].format(item=item, money=quote),
                           f"budget:{key}:quote"))
            latest, answer = (f"budget:{key}:set", "user"), first
            if i != 3:  # three of the four budgets change later
                new = self.money(40, 400, 100)
                plan.add(_Task(t["budget_update_user"].format(item=item), t["budget_update"].format(item=item, money=new),
                               f"budget:{key}:update", after=(f"budget:{key}:set",)))
                plan.ask(f"budget:{key}:date", "temporal", t["q_budget_date"].format(date="{date:budget:%s:set}" % key, item=item),
                         first, latest)
                latest, answer = (f"budget:{key}:update", "reply"), new
            plan.ask(f"budget:{key}", "single", t["q_budget"].format(item=item), answer, latest)
            plan.ask(f"budget:{key}:para", "paraphrased", t["q_budget_para"].format(para=para), answer, latest)

    def hiring(self) -> None:
        t, plan = self.t, self.plan
        candidates = list(t["candidates"])
        self.rng.shuffle(candidates)
        for i, (key, role) in enumerate(t["roles"]):
            group = candidates[3 * i : 3 * i + 3]
            interviewers = self.pick(t["colleagues"], 3)
            for cand, who in zip(group, interviewers):
                plan.add(_Task(self.rng.choice(t["interview"]).format(who=who, cand=cand, role=role),
                               t["interview_reply"].format(role=role), f"hire:{cand}:interview"))
            hired = group[self.rng.randrange(3)]
            asked = self.rng.choice([c for c in group if c != hired])
            plan.ask(f"hire:{key}:interviewer", "single", t["q_interviewer"].format(cand=asked),
                     interviewers[group.index(asked)], (f"hire:{asked}:interview", "user"))
            who = interviewers[group.index(hired)]
            plan.ask(f"hire:{key}:on_date", "temporal", t["q_interview_date"].format(date="{date:hire:%s:interview}" % hired, who=who),
                     hired, (f"hire:{hired}:interview", "user"))
            plan.add(_Task(t["offer"].format(cand=hired, role=role), t["offer_reply"].format(cand=hired, role=role),
                           f"hire:{key}:offer", after=tuple(f"hire:{c}:interview" for c in group)))
            start = "{start:%s}" % key
            plan.add(_Task(t["start_user"], t["start"].format(cand=hired, start=start), f"hire:{key}:start",
                           after=(f"hire:{key}:offer",)))
            plan.ask(f"hire:{key}:start", "multi_hop", t["q_start"].format(role=role), start,
                     (f"hire:{key}:offer", "user"), (f"hire:{key}:start", "reply"))

    def books(self) -> None:
        t, plan = self.t, self.plan
        books = list(t["books"])
        self.rng.shuffle(books)
        people = self.pick(t["colleagues"], 6)
        for i, (title, author) in enumerate(books[:3]):  # recommended
            plan.add(_Task(t["recommend"].format(who=people[i], title=title), t["recommend_reply"], f"book:{i}:recommend"))
            plan.ask(f"book:{i}:recommend", "single", t["q_recommend"].format(who=people[i]), title,
                     (f"book:{i}:recommend", "user"))
        for i, (title, author) in enumerate(books[3:], start=3):  # lent, and its author looked up later
            plan.add(_Task(t["lend"].format(who=people[i], title=title), t["lend_reply"], f"book:{i}:lend"))
            if i < 5:
                plan.add(_Task(t["author"].format(title=title, author=author), t["author_reply"], f"book:{i}:author",
                               after=(f"book:{i}:lend",)))
                plan.ask(f"book:{i}:author", "multi_hop", t["q_author"].format(who=people[i]), author,
                         (f"book:{i}:lend", "user"), (f"book:{i}:author", "user"))
        # The coworker's own authors of the recommended books: distractors for the author questions.
        for i, (title, author) in enumerate(books[:2]):
            plan.add(_Task(t["author"].format(title=title, author=author), t["author_reply"], f"book:{i}:author"))

    def trips(self) -> None:
        t, plan = self.t, self.plan
        people = self.pick(t["colleagues"], len(t["trips"]))
        for i, ((city, hotel), who) in enumerate(zip(t["trips"], people)):
            plan.add(_Task(t["trip"].format(who=who, city=city), t["trip_reply"].format(city=city), f"trip:{i}:who"))
            plan.add(_Task(t["hotel_user"].format(city=city), t["hotel"].format(city=city, hotel=hotel), f"trip:{i}:hotel",
                           after=(f"trip:{i}:who",)))
            plan.ask(f"trip:{i}", "multi_hop", t["q_hotel"].format(who=who), hotel, (f"trip:{i}:who", "user"),
                     (f"trip:{i}:hotel", "reply"))

    def vendors(self) -> None:
        t, plan = self.t, self.plan
        for (key, category, para), names in zip(t["vendors"], t["vendor_names"]):
            a, b, c = self.pick(names, 3)
            m1, m2, m3 = (self.money(8, 60, 1) for _ in range(3))
            plan.add(_Task(t["vendor_quotes_user"].format(category=category),
                           t["vendor_quotes"].format(category=category, a=a, b=b, c=c, m1=m1, m2=m2, m3=m3),
                           f"vendor:{key}:quotes"))
            chosen = self.rng.choice((a, b, c))
            plan.add(_Task(t["vendor_sign"].format(vendor=chosen, category=category),
                           t["vendor_sign_reply"].format(vendor=chosen), f"vendor:{key}:sign",
                           after=(f"vendor:{key}:quotes",)))
            plan.ask(f"vendor:{key}", "single", t["q_vendor"].format(category=category), chosen,
                     (f"vendor:{key}:sign", "user"))
            plan.ask(f"vendor:{key}:para", "paraphrased", t["q_vendor_para"].format(para=para), chosen,
                     (f"vendor:{key}:sign", "user"))

    # Filler -------------------------------------------------------------------

    def filler(self) -> _Task:
        t, rng = self.t, self.rng
        who = rng.choice(t["colleagues"])
        if rng.random() < 0.4:
            user, reply = rng.choice(t["small_talk"])
            extra = 0
        else:
            user, reply = rng.choice(t["work"])
            user, reply = user.format(who=who), reply.format(who=who)
            # Some replies restate the request first, as people do.
            if rng.random() < 0.25:
                ask = user.rstrip("?.!？。！")
                ask = ask[0].lower() + ask[1:] if self.language == "en" else ask
                ask = re.sub(r"^(can you|could you|please) ", "", ask, flags=re.I)
                reply = t["restate"].format(ask=ask) + reply
            extra = rng.choice((0, 1, 1, 2, 3, 5, 8))
        # Replies of mixed length (about 50 to 800 characters): a short one gets a friendly line or two.
        pool = t["extras"] if extra else t["chat_extras"]
        chosen = rng.sample(pool, min(len(pool), max(extra, 1)))
        for line in chosen:
            if extra == 0 and len(reply) >= (50 if self.language == "en" else 25):
                break
            reply += t["space"] + line
        tool = None
        if rng.random() < 0.3:
            docs = rng.sample(t["docs"], rng.randint(2, 5))
            tool = ("search_documents", {"query": rng.choice(t["searches"])},
                    t["search_result"].format(k=len(docs), docs=("、" if self.language == "zh" else ", ").join(docs)))
        return _Task(user, reply, tool=tool)


def _options_result(t: dict, a: str, b: str, c: str) -> str:
    sep = "；" if t is _ZH else "; "
    return sep.join(f"{name}" for name in (a, b, c))


def _schedule(maker: _Maker) -> tuple[list[tuple[date, int]], list[list[_Task]]]:
    """The days and what is said on each: details placed after what they depend on, filler around them."""
    rng, n = maker.rng, maker.n
    n_days = max(12, min(60, round(n / 20))) if n <= 1200 else round(n / 20)
    sizes = [1] * n_days
    for _ in range(n - n_days):
        sizes[rng.randrange(n_days)] += 1
    # Working days 1 to 6 calendar days apart: 12 to 20 days span about 6 to 10 weeks.
    dates, day = [], START
    for _ in range(n_days):
        dates.append(day)
        day += timedelta(days=rng.choice((1, 2, 3, 4, 5, 6)))
        while day.weekday() >= 5 and rng.random() < 0.85:  # now and then a weekend message
            day += timedelta(days=1)
    placed: dict[str, int] = {}
    per_day: list[list[_Task]] = [[] for _ in range(n_days)]
    details = maker.plan.tasks
    below = _chain_below(details)
    for task in details:
        # After what it depends on, and early enough for what depends on it: a multi-hop
        # question's two facts, an update and its original, always fall on different days.
        earliest = max((placed[tag] + 1 for tag in task.after if tag in placed), default=0)
        latest = n_days - 1 - below.get(task.tag, 0)
        days = range(min(earliest, latest), latest + 1)
        free = [d for d in days if len(per_day[d]) < sizes[d] - 1] or list(days)
        task.day = rng.choice(free)
        placed[task.tag] = task.day
        per_day[task.day].append(task)
    for d in range(n_days):
        while len(per_day[d]) < sizes[d]:
            per_day[d].append(maker.filler())
        rng.shuffle(per_day[d])
        # Details that depend on each other on the same day keep their order.
        order = {id(task): i for i, task in enumerate(details)}
        slots = [i for i, task in enumerate(per_day[d]) if id(task) in order]
        ordered = sorted((per_day[d][i] for i in slots), key=lambda task: order[id(task)])
        for i, task in zip(slots, ordered):
            per_day[d][i] = task
    return [(dates[d], sizes[d]) for d in range(n_days)], per_day


def _chain_below(tasks: list[_Task]) -> dict[str, int]:
    """For each tag, how many later days the longest chain of tasks depending on it needs."""
    below: dict[str, int] = {}
    for task in reversed(tasks):
        for tag in task.after:
            below[tag] = max(below.get(tag, 0), below.get(task.tag, 0) + 1)
    return below


def generate_recall_conversation(n_tasks: int = 300, *, language: str = "en", seed: int = 0) -> RecallConversation:
    """A deterministic conversation of n_tasks tasks over several days, with its questions."""
    maker = _Maker(n_tasks, language, seed)
    for part in (maker.venues, maker.budgets, maker.hiring, maker.books, maker.trips, maker.vendors):
        part()
    days, per_day = _schedule(maker)
    t = maker.t
    records: list[Record] = []
    said: dict[tuple[str, str], Record] = {}
    spans, turn = [], 0
    start_dates = {}
    for (day, _), tasks in zip(days, per_day):
        first = turn + 1
        clock = datetime(day.year, day.month, day.day, 9, 0, tzinfo=timezone.utc)
        for task in tasks:
            turn += 1
            clock += timedelta(minutes=maker.rng.randint(3, 25))
            if "{start:" in task.reply:
                key = task.tag.split(":")[1]
                start_day = day + timedelta(days=maker.rng.randint(14, 40))
                start_dates[key] = _say_date(t, start_day)
                task.reply = task.reply.replace("{start:%s}" % key, start_dates[key])
            user, reply = _records(maker, task, turn, clock, records[-1].id if records else None)
            records.extend(user)
            records.extend(reply)
            if task.tag:
                said[(task.tag, "user")] = user[0]
                said[(task.tag, "reply")] = reply[-1]
        spans.append(Day(day, first, turn))
    questions = []
    for key, kind, text, answer, evidence in maker.plan.questions:
        found = tuple(said[ev] for ev in evidence)
        if kind == "temporal" and _ambiguous_day(found[0], said, text, t["colleagues"]):
            continue  # the date names two such messages: no single answer
        text = re.sub(r"\{date:([^}]+)\}", lambda m: _say_date(t, _date_of(said[(m.group(1), "user")])), text)
        answer = re.sub(r"\{start:([^}]+)\}", lambda m: start_dates[m.group(1)], answer)
        questions.append(Question(key, kind, text, answer, tuple(r.id for r in found)))
    return RecallConversation(tuple(records), tuple(spans), tuple(questions), language)


def _ambiguous_day(evidence: Record, said: dict[tuple[str, str], Record], question: str, people: list[str]) -> bool:
    """Whether another interview on the evidence's day names the person the question asks about."""
    interviews = [r for (tag, side), r in said.items() if side == "user" and tag.endswith(":interview")]
    if evidence not in interviews:
        return False
    named = [who for who in people if who in question]
    day = _date_of(evidence)
    return any(r is not evidence and _date_of(r) == day and any(who in r.content for who in named) for r in interviews)


def _date_of(record: Record) -> date:
    return record.created_at.date()


def _say_date(t: dict, day: date) -> str:
    return t["date"].format(weekday=t["weekdays"][day.weekday()], month=t["months"][day.month - 1], day=day.day)


def _records(maker: _Maker, task: _Task, turn: int, clock: datetime, previous: str | None) -> tuple[list[Record], list[Record]]:
    new_id = lambda: str(uuid.UUID(int=maker.ids.getrandbits(128), version=4))  # noqa: E731
    user = Record(new_id(), previous, turn, "user", task.user, None, clock)
    replies: list[Record] = []
    last = user.id
    if task.tool:
        name, args, result = task.tool
        call_id = f"toolu_{maker.ids.getrandbits(48):012x}"
        step = Record(new_id(), last, turn, "assistant", maker.t["search_step"], COWORKER, clock + timedelta(seconds=2),
                      tool_calls=(ToolCall(call_id, name, dict(args)),))
        tool = Record(new_id(), step.id, turn, "tool", result, COWORKER, clock + timedelta(seconds=3), tool_call_id=call_id)
        replies += [step, tool]
        last = tool.id
    replies.append(Record(new_id(), last, turn, "assistant", task.reply, COWORKER, clock + timedelta(seconds=20)))
    return [user], replies
