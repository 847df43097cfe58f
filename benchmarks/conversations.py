"""Deterministic office conversations for bench_context: tasks, tool traffic and planted facts.

Pure: standard library and sessions.history only (no Django, no ORM, no strategies).

A conversation is a chain of history Records, as the app stores them: each task
opens with the user's instruction, then the coworker's tool calls and their
results (documents read, search results, analytics tables: most of the
characters, as in real agents) and a final answer. Topics rotate in blocks.
Early on, the user states decisions (the planted facts); later tasks ask about
them. A fact's needle appears only in the task that plants it (the user's words
and the coworker's confirmation): answers to the later questions never restate
it, so a fact is findable at the end only where a strategy kept it.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from sessions.history import Record, ToolCall

LANGUAGES = ("en", "zh")
COWORKERS = ("mina", "theo", "iris", "sam", "omar")
NAMES = {"mina": "Mina", "theo": "Theo", "iris": "Iris", "sam": "Sam", "omar": "Omar"}
START = datetime(2025, 2, 3, 9, 0, tzinfo=timezone.utc)


@dataclass(frozen=True)
class PlantedFact:
    """A decision the user states once; `needle` must appear in a prompt for the fact to count as present.

    `asked_turns` are the later tasks whose instruction contains `question`.
    """

    key: str
    needle: str
    planted_turn: int
    question: str
    asked_turns: tuple[int, ...] = ()


@dataclass(frozen=True)
class Conversation:
    records: tuple[Record, ...]
    facts: tuple[PlantedFact, ...]
    language: str = "en"

    @property
    def n_tasks(self) -> int:
        return self.records[-1].turn if self.records else 0


# Text ------------------------------------------------------------------------
#
# Every template may use the slots filled by _Slots: {money} {big_money}
# {small_money} {pct} {rate} {n} {big} {date} {person} {month} {weekday} {q}
# {h} {v} {year} {customer} {role} {doc}. Dates are ISO (2025-03-12), so a
# planted date ("May 4") never turns up by chance; _clean re-draws any text
# that happens to contain a needle anyway (a price table that says "$29").


@dataclass(frozen=True)
class _Table:
    title: str
    columns: tuple[str, ...]
    rows: tuple[str, ...]  # row labels; "@weeks" / "@months": generated from the task's date
    kinds: tuple[str, ...]  # one value kind per column after the label


@dataclass(frozen=True)
class _Topic:
    key: str
    lead: str
    helpers: tuple[str, ...]
    asks: tuple[tuple[str, str], ...]  # (instruction, the first sentence of its answer)
    docs: tuple[str, ...]
    lines: tuple[str, ...]
    bullets: tuple[str, ...]
    queries: tuple[str, ...]
    table: _Table


@dataclass(frozen=True)
class _FactText:
    key: str
    topic: str
    needle: str
    statement: str
    confirmation: str
    question: str
    reason: str
    answer: str  # mentions the fact without restating the needle
    search: str  # what the coworker searches for when asked


@dataclass(frozen=True)
class _Language:
    topics: tuple[_Topic, ...]
    facts: tuple[_FactText, ...]
    steps: dict[str, tuple[str, ...]]  # tool name -> what the coworker says before calling it
    closings: tuple[str, ...]
    comments: tuple[str, ...]
    open_questions: tuple[str, ...]
    headings: tuple[str, str, str, str, str]  # context, notes, numbers, comments, open questions
    edited: str
    search_header: str
    search_item: str
    list_header: str
    list_item: str
    saved: str
    table_footer: str
    periods: tuple[str, ...]
    folders: dict[str, str]
    months: tuple[str, ...]
    weekdays: tuple[str, ...]
    customers: tuple[str, ...]
    roles: tuple[str, ...]
    statuses: tuple[str, ...]
    money: str
    hours: str
    days: str
    space: str  # between sentences
    # How many of each a tool result or answer holds (low, high). Chinese says the same in
    # about half the characters, so its documents hold more lines to stay near the task size.
    doc_lines: tuple[int, int] = (5, 8)
    doc_bullets: tuple[int, int] = (3, 5)
    search_results: tuple[int, int] = (5, 8)
    answer_lines: tuple[int, int] = (1, 3)
    highlights: tuple[int, int] = (2, 3)
    asides: tuple[str, ...] = ()  # what a user sometimes adds after the instruction


_EN = _Language(
    topics=(
        _Topic(
            key="marketing",
            lead="mina",
            helpers=("iris", "sam"),
            asks=(
                ("Can you pull last month's channel numbers and tell me which one deserves more budget?",
                 "Newsletter deserves more budget: it converts at {rate} with the lowest CAC in the table, while paid social's CAC rose {pct}."),
                ("Draft three subject lines for the {month} newsletter and check them against what worked before.",
                 "The three subject lines are in the draft; the question-style one is closest to our best performer, and the other two are shorter variants of it."),
                ("Review the ad copy in “{doc}” and tighten it; it reads too long on mobile.",
                 "I tightened the copy to two lines and moved the offer into the first sentence; on a phone it now fits without the 'more' link."),
                ("We have {money} left in the paid budget this quarter. Where should it go?",
                 "I would put most of it into newsletter sponsorships and keep {money} for retargeting once attribution is fixed."),
                ("Summarize what the webinar survey says about why people signed up.",
                 "People signed up mainly for the shared task board and the meeting notes; price came up in only {pct} of answers."),
                ("Compare organic search traffic with last quarter and flag the pages that dropped.",
                 "Organic traffic is down {pct} on the comparison pages, mostly from one lost ranking; the templates gallery grew."),
                ("Write a short LinkedIn post about the customer story with {customer}.",
                 "The post is four lines: their problem, the moment it clicked, one number, and a link to the full story."),
                ("Which blog posts brought in the most trial sign-ups in the last 60 days?",
                 "The two comparison posts and the meeting-notes guide brought in most trial sign-ups; the rest are far behind."),
                ("Put together a one-page brief for the referral campaign.",
                 "The referral brief is one page: offer, audience, timeline and the single metric we will watch."),
                ("Check newsletter open rates by segment and suggest what we should test next.",
                 "Open rates are highest for new trial users; I suggest testing send time next, {weekday} morning against the current afternoon slot."),
            ),
            docs=(
                "Q{q} campaign plan", "Brand voice guide", "Ad copy v{v}", "Newsletter calendar",
                "Webinar survey results", "Referral campaign brief", "SEO audit, {month}",
                "Customer story: {customer}", "Paid media budget", "Content calendar",
            ),
            lines=(
                "The goal for this quarter is to grow qualified trial sign-ups by {pct} without raising blended CAC.",
                "Paid social carried most of the volume, but newsletter readers converted at roughly twice the rate.",
                "Our strongest creative so far is the before-and-after workspace screenshot; it beat the illustration set by {pct} on click-through.",
                "Copy should stay short, concrete and in the second person; avoid words like 'revolutionary' or 'seamless'.",
                "The podcast sponsorship brought fewer clicks than expected, though the sign-ups it did bring stayed active longer.",
                "We will keep one evergreen campaign running and rotate two experiments every {n} days.",
                "Landing pages with a single call to action outperformed the ones with a secondary demo link.",
                "Retargeting is capped at {money} a month until we fix the attribution gap between the ad platforms and our analytics.",
                "Most organic traffic lands on the comparison pages and the templates gallery.",
                "Respondents mentioned the shared task board and the meeting notes feature most often.",
                "The {weekday} send consistently gets the best open rate; the weekend send is the weakest.",
                "Every post needs an owner, a publish date and a single metric we expect it to move.",
                "The referral reward is a month free for both sides, capped at three referrals per account.",
                "Legal asked us to stop quoting unverified competitor numbers in ads.",
                "A/B test results under {n} hundred visitors per arm are treated as directional only.",
                "We saw a spike in unsubscribes after the long-form issue on {date}; shorter issues are safer.",
            ),
            bullets=(
                "Owner: {person}; review on {date}", "Refresh the hero image before the next send",
                "Cut the second paragraph of the ad copy to one line", "Move {money} from display to newsletter sponsorships",
                "Tag all campaign links with the new UTM scheme", "Ask design for two square variants and one story variant",
                "Pause the lowest performing ad set after {n} days", "Add a customer quote above the fold",
            ),
            queries=(
                "campaign results {month}", "newsletter open rate by segment", "ad copy feedback",
                "referral program terms", "webinar sign-ups", "brand voice examples", "organic traffic drop",
            ),
            table=_Table(
                "Channel performance",
                ("Channel", "Sessions", "Sign-ups", "Conv.", "Spend", "CAC"),
                ("Google Ads", "LinkedIn", "Instagram", "Newsletter", "Organic search", "Referral", "Podcast"),
                ("sessions", "count", "rate", "money", "small_money"),
            ),
        ),
        _Topic(
            key="pricing",
            lead="sam",
            helpers=("mina", "theo"),
            asks=(
                ("How are upgrades from Starter to Business trending this quarter?",
                 "Upgrades from Starter to Business are up {pct} this quarter, mostly from teams that passed ten members."),
                ("Draft the FAQ entry that explains the difference between the Starter and Business plans.",
                 "The FAQ draft explains the two plans in three short paragraphs: who each is for, admin controls, and how to switch."),
                ("Pull churn by plan for the last three months and tell me what stands out.",
                 "Churn is highest on Starter; Business churn is stable at {rate}, and most downgrades follow a missed invoice."),
                ("A customer asked for a nonprofit discount. What have we done before?",
                 "We gave a nonprofit discount {n} times last year, always applied by support, never with a public code."),
                ("Check how annual billing is doing compared with monthly.",
                 "Annual billing is {pct} of new paid accounts, so it is worth featuring on the pricing page."),
                ("Compare our plan limits with the competitors in “{doc}”.",
                 "Our limits are more generous on projects and tighter on storage; competitors bundle video calls, which we do not plan to."),
                ("What happens to MRR if we raise the Business plan by {pct}?",
                 "If nobody downgrades, MRR grows by roughly {money}; with last year's downgrade rate it is about half that."),
                ("Summarize the feedback from the pricing page survey.",
                 "The survey says seat-based pricing confuses people and the storage limits are hard to find."),
                ("Prepare a short note for the sales team on how to handle seat-based questions.",
                 "For the sales note I kept it to five questions with one-line answers and an example bill for a team of {n}."),
                ("Which add-ons are customers actually paying for?",
                 "Storage is the add-on customers pay for; the others barely register, and storage buyers churn less."),
            ),
            docs=(
                "Pricing page copy", "Plan comparison matrix", "Discount policy", "Competitor pricing notes",
                "Billing FAQ", "Q{q} revenue review", "Add-on catalogue", "Pricing survey results",
            ),
            lines=(
                "Starter is for individuals, Business for teams that need admin controls and audit logs.",
                "Annual billing is offered on every paid plan; most customers still choose monthly.",
                "We never discount more than {pct} without approval from Sam.",
                "Seat-based pricing confused a third of the survey respondents, mostly on the Business plan.",
                "Upgrades cluster around the moment a workspace passes ten active members.",
                "Nonprofits and schools get a standing discount; it is applied by support, not through a code.",
                "The plan comparison table on the website is out of date for storage limits.",
                "Downgrades usually follow a missed invoice rather than a deliberate choice.",
                "Competitors bundle video calls into their top tier; we do not plan to.",
                "The Business plan accounts for most of the expansion revenue this quarter.",
                "Price changes apply to new customers first; existing customers keep their price for twelve months.",
                "Customers who add the storage add-on churn noticeably less than those who do not.",
                "Invoices are issued on the first business day of the month, in the customer's currency.",
                "The free plan is limited to three projects and 14 days of history.",
            ),
            bullets=(
                "Update the storage limits in the comparison table", "Owner: {person}; due {date}",
                "Check the invoice template for tax wording", "Add a line about seat minimums",
                "Send the draft to legal before publishing", "Review discount requests older than {n} days",
                "Add an example bill for a team of {n}",
            ),
            queries=(
                "annual vs monthly billing", "nonprofit discount", "churn by plan", "pricing page feedback",
                "seat minimum", "add-on revenue",
            ),
            table=_Table(
                "Plan metrics",
                ("Plan", "Accounts", "MRR", "Churn", "ARPA", "Upgrades"),
                ("Free", "Starter", "Team", "Business", "Enterprise"),
                ("count", "money", "rate", "small_money", "count"),
            ),
        ),
        _Topic(
            key="hiring",
            lead="omar",
            helpers=("theo", "iris"),
            asks=(
                ("Where are we in the pipeline for the {role} role?",
                 "The pipeline has {n} candidates past screening and two in final interviews; the role has been open {n} weeks."),
                ("Draft the job post for a {role}; keep it honest about what is hard here.",
                 "I drafted the post around a real week of work, put the salary range at the top and named the two hardest parts of the job."),
                ("Summarize the interview feedback for the candidates we saw this week.",
                 "Feedback is consistent: strong on craft, weaker on explaining trade-offs; one candidate stands out on both."),
                ("Schedule the onsite loop for the two finalists and tell me who is on the panel.",
                 "Both loops are booked for {weekday}; Theo and Iris are on the panel with you."),
                ("What did candidates say in the declined-offer surveys?",
                 "Declined offers mostly cited start dates and equity; only one mentioned salary."),
                ("Put together an onboarding checklist for the new {role}.",
                 "The onboarding checklist covers accounts, a buddy outside the team, and a first small project by week two."),
                ("Which sourcing channel gave us the best candidates last quarter?",
                 "Referrals gave us the best candidates last quarter; job boards gave the most volume but few onsite invitations."),
                ("Review the take-home exercise and tell me if it is still fair.",
                 "The take-home is still fair, but I would cut the second part to keep it under three hours."),
            ),
            docs=(
                "Job post: {role}", "Interview scorecard", "Hiring plan H{h}", "Onboarding checklist",
                "Take-home exercise", "Candidate pipeline", "Offer letter template", "Interview panel rota",
            ),
            lines=(
                "Every candidate gets a reply within a week, including the ones we turn down.",
                "The take-home exercise should take under three hours, and we pay for it.",
                "Panels have three interviewers and nobody sits on more than two loops a week.",
                "Scorecards are written before the debrief so the loudest voice does not set the tone.",
                "Referrals move faster but do not skip any stage.",
                "Two candidates withdrew after long gaps between stages; the loop has to fit in ten days.",
                "We post salary ranges on every job post.",
                "Remote candidates get the same onsite loop over video, with a paid day for the exercise.",
                "The first week is for setup and shadowing; nobody ships on day one.",
                "Declined offers mostly cited start dates and equity, not salary.",
                "Job posts that describe a real week of work got more relevant applications.",
                "Each new hire has a buddy outside their own team for the first month.",
                "Interview questions are shared in advance for the system design session.",
            ),
            bullets=(
                "Send the scorecard template to the panel", "Book the onsite for {weekday}",
                "Owner: {person}; review on {date}", "Ask for two references, one of them a peer",
                "Prepare laptop and accounts before day one", "Share the exercise brief {n} days ahead",
                "Close the post once we have {n} strong applicants",
            ),
            queries=("interview feedback {role}", "declined offers", "onboarding checklist", "sourcing channels", "take-home exercise"),
            table=_Table(
                "Hiring pipeline",
                ("Role", "Applicants", "Screened", "Interviews", "Offers", "Days open"),
                ("Backend engineer", "Product designer", "Customer success lead", "Growth marketer", "Data analyst", "Support specialist"),
                ("count", "small_count", "small_count", "tiny_count", "days"),
            ),
        ),
        _Topic(
            key="launch",
            lead="theo",
            helpers=("iris", "mina"),
            asks=(
                ("What is still blocking the launch? Give me the short list.",
                 "Two things block the launch: the mobile invite link and the billing migration; everything else is on track."),
                ("Review the launch checklist in “{doc}” and mark what is done.",
                 "The checklist is {pct} done; what is left is screenshots and the final copy review."),
                ("Draft the release notes for the beta build.",
                 "The release notes are in plain language, grouped by what customers will notice first."),
                ("Is the billing migration on track? Check with the tracker.",
                 "The billing migration is on track, with the dry run scheduled for {weekday}."),
                ("Write the email we send to beta users the day before we go live.",
                 "The beta email is short: what goes live, what changes for them, and how to reach us."),
                ("Go through the open bugs tagged for launch and rank them.",
                 "I ranked the open bugs by how many beta teams hit them; the slow first load comes first, the invite link second."),
                ("Plan the demo video: scenes, length, who records it.",
                 "The demo video plan has five scenes, runs about ninety seconds, and {person} records it with the final build."),
                ("Check whether the help center articles cover the new onboarding flow.",
                 "The help center covers the new onboarding flow except two screens still waiting for screenshots."),
            ),
            docs=(
                "Launch checklist", "Release notes draft", "Beta feedback log", "Launch tracker",
                "Press kit outline", "Demo video plan", "Onboarding flow spec", "Go-live runbook",
            ),
            lines=(
                "The beta has {n} teams using it daily; most feedback is about onboarding.",
                "Go-live needs sign-off from engineering, design and support the day before.",
                "We will roll out to {pct} of new sign-ups first and watch error rates for a day.",
                "The billing migration must finish before any launch announcement goes out.",
                "Release notes are written for customers, not for us: what changed and why it helps.",
                "Screenshots in the press kit must match the final interface.",
                "The demo video should be under two minutes and show one complete task.",
                "Two launch bugs are still open: a slow first load and a broken invite link on mobile.",
                "Help center articles are drafted for every new screen; three still need screenshots.",
                "The status page and the on-call rota are ready for launch week.",
                "Beta users asked for keyboard shortcuts more than any other feature.",
                "We freeze features ten days before go-live; only fixes after that.",
                "The runbook lists who to call, in what order, if sign-ups fail.",
            ),
            bullets=(
                "Fix the invite link on mobile", "Owner: {person}; due {date}", "Record the demo with the final build",
                "Dry-run the rollback", "Send the beta email on {weekday}", "Update the status page template",
                "Check the onboarding flow on a slow connection", "Freeze the copy {n} days before go-live",
            ),
            queries=("launch blockers", "beta feedback onboarding", "billing migration status", "release notes", "open bugs tagged launch"),
            table=_Table(
                "Launch tracker",
                ("Workstream", "Owner", "Status", "Due", "Open items"),
                ("Landing page", "Pricing page", "Onboarding emails", "Press kit", "Demo video", "Help center", "Billing migration"),
                ("person", "status", "date", "tiny_count"),
            ),
        ),
        _Topic(
            key="support",
            lead="theo",
            helpers=("omar", "sam"),
            asks=(
                ("What are customers complaining about most this week?",
                 "Exports and calendar sync make up most of this week's tickets; both have a known cause."),
                ("Draft a reply to the customer whose export failed twice.",
                 "The reply apologizes once, explains the cause and gives the workaround until the fix ships."),
                ("Pull the support metrics for the last few weeks and tell me if we are keeping up.",
                 "We are keeping up on weekdays; the weekend first reply time is the weak spot and the backlog grew by {n}."),
                ("Turn the top three ticket topics into help center articles.",
                 "I drafted three articles from the top ticket topics and linked them from the macros."),
                ("Review the macros in “{doc}” and fix the ones that sound robotic.",
                 "I rewrote {n} macros so they sound like a person and cut the repeated apologies."),
                ("A customer wants a refund after the outage on {date}. What is our policy?",
                 "Our policy is a prorated refund for the affected days, so this customer gets {small_money} back."),
                ("Which bugs generate the most tickets?",
                 "The export bug generates the most tickets, followed by calendar sync after time zone changes."),
                ("Prepare the weekly support summary for the team meeting.",
                 "The weekly summary is ready: volume, the top three topics, and one process change for the weekend shift."),
            ),
            docs=(
                "Support macros", "Refund policy", "Weekly support summary", "Escalation guide", "Known issues",
                "Outage postmortem {date}", "Help center backlog",
            ),
            lines=(
                "Most tickets this week are about exports and calendar sync.",
                "The export failure affects workspaces with more than {n} thousand files.",
                "Refunds for outages are prorated for the affected days; we do not refund whole months.",
                "Escalate to engineering when a bug affects more than one customer or any data.",
                "Macros should read like a person wrote them: short, specific, no apologies in every line.",
                "The median first reply time went up on the weekend, when only one person is on shift.",
                "Known issues are listed publicly with a workaround when there is one.",
                "Customer satisfaction dips whenever a ticket is reassigned more than once.",
                "Calendar sync fails for accounts that changed their time zone after signing up.",
                "We close tickets only after the customer confirms or after five quiet days.",
                "The outage postmortem is public and lists the three fixes we committed to.",
                "Help center searches with no result are the best source of new article ideas.",
            ),
            bullets=(
                "Rewrite the export failure macro", "Owner: {person}; due {date}", "Add a workaround for calendar sync",
                "Tag tickets by feature, not by customer", "Review reassigned tickets every {weekday}",
                "Link the postmortem in the outage macro", "Add {n} articles from the no-result searches",
            ),
            queries=("export failed", "calendar sync", "refund outage", "reassigned tickets", "help center no results"),
            table=_Table(
                "Support metrics",
                ("Week", "Tickets", "First reply", "Resolution", "CSAT", "Backlog"),
                ("@weeks",),
                ("count", "hours", "long_hours", "score", "small_count"),
            ),
        ),
        _Topic(
            key="finance",
            lead="sam",
            helpers=("omar", "mina"),
            asks=(
                ("How much runway do we have at the current burn?",
                 "At the current burn we have about {n} months of runway, without counting new revenue."),
                ("Pull spending by category for the last quarter and flag anything unusual.",
                 "Spending is in line with the budget except tools, which ran {pct} over."),
                ("Which software subscriptions could we cancel?",
                 "We can cancel {n} subscriptions nobody has opened in sixty days, saving about {money} a month."),
                ("Prepare the numbers for the monthly investor update.",
                 "The investor update has the same five numbers as last month, with one line on hiring."),
                ("Check that last month's invoices were all paid.",
                 "All invoices but one were paid; the overdue one is from {customer}."),
                ("Draft next quarter's budget with the same headcount.",
                 "The budget draft keeps headcount flat, trims ads slightly and adds a line for conference travel."),
                ("Compare revenue with the plan in “{doc}”.",
                 "Revenue is {pct} ahead of plan, mostly from annual prepayments, which flatter the first quarter."),
                ("What did we spend on contractors this year?",
                 "Contractor spend this year is {money}, most of it before the engineering hires."),
            ),
            docs=(
                "Budget {year}", "Investor update draft", "Software subscriptions", "Cash flow forecast",
                "Revenue plan", "Contractor spend", "Expense policy",
            ),
            lines=(
                "Payroll is about two thirds of monthly spending; tools and ads make up most of the rest.",
                "We plan on a conservative case where revenue grows {pct} a quarter.",
                "Subscriptions are reviewed every quarter; anything unused for sixty days is cancelled.",
                "Invoices over {money} need a second approver.",
                "The investor update goes out in the first week of each month with the same five numbers.",
                "Contractor spend rose while we were hiring and should fall once the roles are filled.",
                "Ad spend is set monthly and never carried over.",
                "Cash is held in two banks; the operating account covers three months of spending.",
                "Expense reports are due by the fifth of the following month.",
                "Annual plans paid up front make the first quarter look better than it is.",
                "We treat anything above {pct} variance from the budget as worth a short explanation.",
            ),
            bullets=(
                "Cancel the unused design tool seats", "Owner: {person}; due {date}",
                "Chase the overdue invoice from {customer}", "Move the ad budget review to {weekday}",
                "Add a line for conference travel", "Check the currency conversion on {n} invoices",
            ),
            queries=("runway", "software subscriptions", "overdue invoices", "contractor spend", "investor update"),
            table=_Table(
                "Monthly spending",
                ("Month", "Revenue", "Payroll", "Tools", "Ads", "Net burn"),
                ("@months",),
                ("big_money", "big_money", "money", "money", "big_money"),
            ),
        ),
    ),
    facts=(
        _FactText(
            "team_price", "pricing", "$29",
            "We decided the Team plan costs $29/month.",
            "Noted: the Team plan is $29 a month.",
            "What price did we agree for the Team plan?", "I need it for the partner email.",
            "I put the Team plan price we agreed into “{doc}” and left a comment for Sam to confirm it before it goes out.",
            "Team plan price",
        ),
        _FactText(
            "target_customer", "marketing", "freelance designers",
            "Remember: our target customer is freelance designers.",
            "Got it: freelance designers are the target customer, and I'll write with them in mind.",
            "Who did we say our target customer is?", "I'm briefing the agency tomorrow.",
            "I rewrote the intro of “{doc}” around the target customer we chose and used examples from their work.",
            "target customer",
        ),
        _FactText(
            "launch_deadline", "launch", "May 4",
            "The launch deadline is May 4.",
            "Understood: everything in the plan works back from May 4.",
            "When is the launch deadline again?", "I want to check the schedule against it.",
            "I worked the schedule in “{doc}” back from the launch deadline we set; two items are tight.",
            "launch deadline",
        ),
        _FactText(
            "product_name", "launch", "Lumen Desk",
            "We're calling the product Lumen Desk. That's final, no more naming debates.",
            "Great, Lumen Desk it is; I'll update the drafts.",
            "What's the final product name we settled on?", "The press kit needs it.",
            "I updated “{doc}” to use the final product name everywhere and flagged two screenshots that still show the old one.",
            "product name",
        ),
        _FactText(
            "hiring_budget", "hiring", "$180,000",
            "Our hiring budget for this half is $180,000, all in.",
            "Noted: $180,000 for the half, including recruiting fees.",
            "How much hiring budget do we have for this half?", "I'm planning the next two offers.",
            "I checked the plan in “{doc}” against the hiring budget we agreed; both roles fit if the offers land mid-range.",
            "hiring budget",
        ),
        _FactText(
            "promo_code", "marketing", "LAUNCH15",
            "The launch promo code is LAUNCH15: 15% off the first three months.",
            "Got it: LAUNCH15, limited to the first three months.",
            "Which promo code are we using for the launch?", "It has to go into the beta email.",
            "I added the launch promo code we chose to “{doc}” and checked that the discount stops after three months.",
            "launch promo code",
        ),
        _FactText(
            "competitor", "marketing", "Northwind Studio",
            "We position against Northwind Studio, not the big suites.",
            "Understood: Northwind Studio is the comparison we lead with.",
            "Which competitor did we decide to position against?", "I'm writing the comparison page.",
            "I framed the comparison in “{doc}” around the competitor we picked and left the big suites out.",
            "competitor positioning",
        ),
        _FactText(
            "support_sla", "support", "within 4 hours",
            "We promise enterprise customers a first reply within 4 hours.",
            "Noted: enterprise tickets get a first reply within 4 hours, weekends included.",
            "What first-reply time did we promise enterprise customers?", "I'm reviewing the weekend rota.",
            "I checked “{doc}” against the first-reply promise we made to enterprise customers; the weekend rota is the risk.",
            "enterprise first reply",
        ),
    ),
    steps={
        "read_document": ("Reading the latest version first.", "Let me open the document.", "I'll check the current draft.", ""),
        "search_documents": ("Let me check what we already have on this.", "Searching our docs first.", ""),
        "query_analytics": ("I'll pull the numbers first.", "Let me get the latest figures.", ""),
        "list_documents": ("Let me see what's in the folder.", ""),
        "write_document": ("Saving the draft.", "I'll save this so you can edit it.", ""),
    },
    closings=(
        "Want me to hand this to {person} for a second look?", "I saved the draft as “{doc}”.",
        "Happy to shorten it if you want a one-liner.", "I'll check the numbers again after {weekday}'s update.",
        "Let me know if you want it as a table instead.",
    ),
    comments=(
        "{person}: agreed, but let's revisit after the {weekday} sync.",
        "{person}: can we get a number for this before we decide?",
        "{person}: I added two examples from last quarter.",
        "{person}: this matches what customers told us on calls.",
        "{person}: flagging that the legal review is still pending.",
    ),
    open_questions=(
        "Who signs off on the final version?", "Do we need legal review before this goes out?",
        "Should this wait until after the quarterly review?", "Is the sample big enough to decide on?",
        "Which team owns the follow-up?",
    ),
    headings=("Context", "Notes", "Numbers", "Comments", "Open questions"),
    edited="Last edited {date} by {person}",
    search_header="Search results for “{query}” ({k} of {total}):",
    search_item="{i}. {title} ({folder}, updated {date} by {person})\n   …{snippet}…",
    list_header="Documents in {folder} ({k}):",
    list_item="- {title} · {person} · updated {date} · {size} KB",
    saved="Saved “{title}” (version {v}, {chars} characters). Shared with {person}.",
    table_footer="Source: warehouse, refreshed {date}.",
    periods=("last 30 days", "Q{q}", "last 6 weeks", "{month}"),
    folders={"marketing": "Marketing", "pricing": "Pricing", "hiring": "People", "launch": "Launch",
             "support": "Support", "finance": "Finance"},
    months=("January", "February", "March", "April", "May", "June", "July", "August", "September",
            "October", "November", "December"),
    weekdays=("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
    customers=("Harbor & Vine", "Clearwater Dental", "Tidewell Architects", "Moss & Co.", "Brightside Tutoring", "Oakline Legal"),
    roles=("backend engineer", "product designer", "customer success lead", "growth marketer", "data analyst", "support specialist"),
    statuses=("On track", "At risk", "Done", "Blocked", "Not started"),
    money="${value:,}",
    hours="{value:.1f} h",
    days="{value} d",
    space=" ",
    asides=(
        "It's for the {weekday} review.", "Keep it short, please.", "Sam asked for this yesterday.",
        "No need to polish it yet.", "Loop in {person} if you need numbers.", "I'd like to send it today.",
    ),
)

_ZH = _Language(
    topics=(
        _Topic(
            key="marketing",
            lead="mina",
            helpers=("iris", "sam"),
            asks=(
                ("可以幫我整理上個月各渠道的數據，看看哪個值得加碼嗎？",
                 "電子報最值得加碼：轉換率 {rate}，獲客成本是表上最低的；付費社群的獲客成本則上升了 {pct}。"),
                ("幫{month}的電子報擬三個標題，並和以前表現好的比較一下。",
                 "三個標題都放在草稿裡了；問句型那個最接近我們過去表現最好的一封，另外兩個是它的短版。"),
                ("看一下「{doc}」裡的廣告文案，手機上讀起來太長了，幫我精簡。",
                 "我把文案縮成兩行，並把優惠放到第一句；現在手機上不用點「更多」就能看完。"),
                ("這季廣告預算還剩 {money}，該放在哪裡？",
                 "建議大部分放在電子報贊助，保留 {money} 等歸因修好後做再行銷。"),
                ("整理一下網路研討會問卷裡，大家報名的原因。",
                 "大家報名主要是為了共享任務看板和會議紀錄；提到價格的只有 {pct}。"),
                ("比較這季和上季的自然搜尋流量，標出掉最多的頁面。",
                 "比較頁的自然流量下滑了 {pct}，主要是掉了一個關鍵字排名；範本庫則有成長。"),
                ("幫我寫一則 LinkedIn 貼文，介紹和 {customer} 合作的客戶故事。",
                 "貼文共四行：他們的問題、轉折點、一個數字，以及完整故事的連結。"),
                ("過去 60 天哪些部落格文章帶來最多試用註冊？",
                 "兩篇比較文和會議紀錄指南帶來最多試用註冊，其他文章差很多。"),
                ("幫推薦活動整理一頁的簡報。",
                 "推薦活動簡報只有一頁：優惠、對象、時程，以及我們要看的單一指標。"),
                ("看看電子報各分眾的開信率，建議下一步要測什麼。",
                 "新試用用戶的開信率最高；建議下一步測寄送時間：{weekday}早上對比目前的下午時段。"),
            ),
            docs=(
                "Q{q} 行銷活動計畫", "品牌語氣指南", "廣告文案 v{v}", "電子報排程", "研討會問卷結果",
                "推薦活動簡報", "SEO 稽核（{month}）", "客戶故事：{customer}", "付費媒體預算", "內容行事曆",
            ),
            lines=(
                "這季的目標是在不提高整體獲客成本的前提下，讓有效試用註冊成長 {pct}。",
                "付費社群帶來大部分流量，但電子報讀者的轉換率大約是兩倍。",
                "目前表現最好的素材是工作區前後對比截圖，點擊率比插畫組高 {pct}。",
                "文案要短、具體、用第二人稱；避免「革命性」「無縫」這類字眼。",
                "Podcast 贊助帶來的點擊比預期少，但這些用戶留存得比較久。",
                "我們會保留一個長青活動，另外每 {n} 天輪換兩個實驗。",
                "只有一個行動呼籲的登陸頁，表現比放了第二個示範連結的好。",
                "在修好廣告平台和分析工具之間的歸因落差前，再行銷每月上限 {money}。",
                "大部分自然流量落在比較頁和範本庫。",
                "問卷中最常被提到的是共享任務看板和會議紀錄功能。",
                "{weekday}寄出的電子報開信率一直最好，週末寄出的最差。",
                "每篇貼文都要有負責人、發布日期，以及一個預期會推動的指標。",
                "推薦獎勵是雙方各得一個月免費，每個帳號最多三次。",
                "法務要求廣告中不要再引用未經查證的競品數字。",
                "每組少於 {n} 百位訪客的 A/B 測試結果只當作方向參考。",
                "{date} 那期長篇電子報後退訂數明顯上升，短一點比較安全。",
            ),
            bullets=(
                "負責人：{person}；{date} 檢查", "下次寄送前更新主視覺", "把廣告文案第二段縮成一行",
                "從展示廣告移 {money} 到電子報贊助", "所有活動連結套用新的 UTM 規則",
                "請設計給兩個方形版本和一個限時動態版本", "表現最差的廣告組 {n} 天後暫停", "在首屏加上一句客戶推薦",
            ),
            queries=("{month}行銷成效", "電子報分眾開信率", "廣告文案回饋", "推薦活動條款", "研討會報名", "品牌語氣範例"),
            table=_Table(
                "渠道成效",
                ("渠道", "工作階段", "註冊", "轉換率", "花費", "獲客成本"),
                ("Google Ads", "LinkedIn", "Instagram", "電子報", "自然搜尋", "推薦", "Podcast"),
                ("sessions", "count", "rate", "money", "small_money"),
            ),
        ),
        _Topic(
            key="pricing",
            lead="sam",
            helpers=("mina", "theo"),
            asks=(
                ("這季從 Starter 升級到 Business 的趨勢如何？",
                 "這季從 Starter 升級到 Business 成長了 {pct}，大多是成員超過十人的團隊。"),
                ("幫我寫一則常見問題，說明 Starter 和 Business 方案的差別。",
                 "常見問題草稿用三小段說明：各方案適合誰、管理權限，以及怎麼切換。"),
                ("拉出最近三個月各方案的流失率，告訴我有什麼特別的。",
                 "Starter 的流失率最高；Business 穩定在 {rate}，多數降級都發生在漏繳帳單之後。"),
                ("有客戶問非營利折扣，我們以前怎麼處理？",
                 "去年我們給過 {n} 次非營利折扣，都是由客服套用，從沒用公開優惠碼。"),
                ("看一下年繳和月繳的表現比較。",
                 "年繳佔新付費帳號的 {pct}，值得在定價頁上強調。"),
                ("把我們的方案限制和「{doc}」裡的競品比較一下。",
                 "我們的專案數上限比較寬鬆，儲存空間比較緊；競品把視訊會議綁進方案，我們不打算跟進。"),
                ("如果 Business 方案漲 {pct}，MRR 會怎麼變？",
                 "如果沒有人降級，MRR 大約增加 {money}；以去年的降級比例估算，大約是一半。"),
                ("整理定價頁問卷的回饋。",
                 "問卷顯示按席次計價讓人困惑，儲存空間上限也不好找。"),
                ("幫業務團隊準備一份簡短說明，教他們回答按席次計價的問題。",
                 "給業務的說明整理成五個問題，每題一句回答，另附一個 {n} 人團隊的帳單範例。"),
                ("客戶實際付費買的是哪些加購項目？",
                 "客戶真正付費的加購是儲存空間，其他幾乎沒有；買儲存空間的客戶流失也比較少。"),
            ),
            docs=("定價頁文案", "方案比較表", "折扣政策", "競品定價筆記", "帳務常見問題", "Q{q} 營收檢討", "加購項目目錄", "定價問卷結果"),
            lines=(
                "Starter 給個人使用，Business 給需要管理權限和稽核紀錄的團隊。",
                "所有付費方案都提供年繳，但大部分客戶還是選月繳。",
                "任何超過 {pct} 的折扣都需要 Sam 核准。",
                "三分之一的問卷填答者被按席次計價搞混，大多是 Business 方案的客戶。",
                "升級大多發生在工作區活躍成員超過十人的時候。",
                "非營利組織和學校有固定折扣，由客服套用，不用優惠碼。",
                "官網上的方案比較表，儲存空間上限已經過時。",
                "降級通常是因為漏繳帳單，而不是刻意選擇。",
                "競品把視訊會議綁在最高方案裡，我們不打算這樣做。",
                "這季大部分擴張營收來自 Business 方案。",
                "價格調整先套用在新客戶，既有客戶維持原價十二個月。",
                "加購儲存空間的客戶，流失率明顯比較低。",
                "帳單在每月第一個工作日開立，以客戶的幣別計價。",
                "免費方案限三個專案，歷史紀錄保留 14 天。",
            ),
            bullets=(
                "更新比較表裡的儲存上限", "負責人：{person}；{date} 前完成", "檢查發票範本的稅務用語", "加一行說明最低席次",
                "發布前先給法務看", "處理超過 {n} 天的折扣申請", "加一個 {n} 人團隊的帳單範例",
            ),
            queries=("年繳 月繳", "非營利折扣", "各方案流失率", "定價頁回饋", "最低席次", "加購營收"),
            table=_Table(
                "方案指標",
                ("方案", "帳號數", "MRR", "流失率", "ARPA", "升級數"),
                ("Free", "Starter", "Team", "Business", "Enterprise"),
                ("count", "money", "rate", "small_money", "count"),
            ),
        ),
        _Topic(
            key="hiring",
            lead="omar",
            helpers=("theo", "iris"),
            asks=(
                ("{role}這個職缺的招募進度到哪了？",
                 "目前有 {n} 位通過篩選，兩位進入最後一輪；這個職缺已經開了 {n} 週。"),
                ("幫我寫{role}的職缺說明，誠實寫出這裡難的地方。",
                 "職缺說明以真實的一週工作來寫，薪資範圍放在最前面，也寫出這份工作最難的兩件事。"),
                ("整理這週面試候選人的回饋。",
                 "回饋很一致：專業能力強，但說明取捨比較弱；有一位兩方面都很突出。"),
                ("幫兩位決選候選人安排現場面試，告訴我面試官是誰。",
                 "兩場都排在{weekday}；Theo 和 Iris 會和你一起當面試官。"),
                ("拒絕錄取的候選人在問卷裡說了什麼？",
                 "拒絕錄取的原因大多是到職日和股票，只有一位提到薪水。"),
                ("幫新進的{role}整理一份到職清單。",
                 "到職清單包含帳號、一位其他團隊的夥伴，以及第二週前完成的第一個小專案。"),
                ("上一季哪個招募管道帶來最好的候選人？",
                 "上一季內部推薦帶來最好的候選人；求職網站量最多，但很少進到現場面試。"),
                ("看一下回家作業題目，還公平嗎？",
                 "回家作業還算公平，但建議刪掉第二部分，控制在三個鐘頭左右。"),
            ),
            docs=("職缺說明：{role}", "面試評分表", "H{h} 招募計畫", "到職清單", "回家作業題目", "候選人進度表", "錄取通知範本", "面試官輪值表"),
            lines=(
                "每位候選人一週內都會收到回覆，包括沒錄取的。",
                "回家作業應該能在三個鐘頭左右完成，而且我們會付費。",
                "每場面試有三位面試官，每人每週最多參加兩輪。",
                "評分表要在討論會前寫好，避免最大聲的人定調。",
                "內部推薦會比較快，但不會跳過任何關卡。",
                "有兩位候選人因為關卡間隔太久而退出；整個流程要在十天內完成。",
                "每個職缺說明都公開薪資範圍。",
                "遠端候選人透過視訊進行同樣的面試，回家作業那天也有給薪。",
                "第一週用來設定環境和跟著學，沒有人第一天就上線東西。",
                "拒絕錄取的原因大多是到職日和股票，不是薪水。",
                "描述真實一週工作內容的職缺說明，收到的應徵更相關。",
                "每位新人第一個月都有一位其他團隊的夥伴。",
                "系統設計那關的題目會事先提供。",
            ),
            bullets=(
                "把評分表範本寄給面試官", "現場面試訂在{weekday}", "負責人：{person}；{date} 檢查",
                "請對方提供兩位推薦人，其中一位是同儕", "到職前準備好筆電和帳號", "作業說明提前 {n} 天寄出",
                "收到 {n} 份好履歷就關閉職缺",
            ),
            queries=("{role}面試回饋", "拒絕錄取", "到職清單", "招募管道", "回家作業"),
            table=_Table(
                "招募進度",
                ("職缺", "應徵", "篩選", "面試", "錄取", "開缺天數"),
                ("後端工程師", "產品設計師", "客戶成功主管", "成長行銷", "資料分析師", "客服專員"),
                ("count", "small_count", "small_count", "tiny_count", "days"),
            ),
        ),
        _Topic(
            key="launch",
            lead="theo",
            helpers=("iris", "mina"),
            asks=(
                ("上線前還卡著什麼？給我簡短清單。",
                 "有兩件事卡住上線：手機邀請連結和帳務遷移，其他都照進度。"),
                ("看一下「{doc}」裡的上線檢查清單，標出已完成的項目。",
                 "檢查清單完成了 {pct}，剩下的是截圖和最終文案審閱。"),
                ("幫 beta 版本寫版本說明。",
                 "版本說明已用白話寫好，依客戶最先會注意到的改變分組。"),
                ("帳務遷移有照進度嗎？對照一下追蹤表。",
                 "帳務遷移照進度進行，演練排在{weekday}。"),
                ("寫一封上線前一天寄給 beta 用戶的信。",
                 "Beta 通知信很短：上線什麼、對他們有什麼改變、怎麼聯絡我們。"),
                ("看過標記為上線的未解 bug，排出優先順序。",
                 "我依受影響的 beta 團隊數排序：首次載入太慢排第一，邀請連結第二。"),
                ("規劃示範影片：分鏡、長度、誰來錄。",
                 "示範影片企劃有五個分鏡，約九十秒，由 {person} 用最終版本錄製。"),
                ("確認說明中心的文章有沒有涵蓋新的新手引導流程。",
                 "說明中心涵蓋了新的新手引導流程，只剩兩個畫面在等截圖。"),
            ),
            docs=("上線檢查清單", "版本說明草稿", "Beta 回饋紀錄", "上線追蹤表", "媒體資料包大綱", "示範影片企劃", "新手引導規格", "上線執行手冊"),
            lines=(
                "目前有 {n} 個團隊每天使用 beta，多數回饋和新手引導有關。",
                "上線前一天需要工程、設計和客服簽核。",
                "我們會先開放給 {pct} 的新註冊，觀察一天的錯誤率。",
                "帳務遷移必須在任何上線公告前完成。",
                "版本說明是寫給客戶看的：改了什麼、為什麼有幫助。",
                "媒體資料包裡的截圖必須和最終介面一致。",
                "示範影片控制在兩分鐘內，完整呈現一個任務。",
                "還有兩個上線 bug 未解：首次載入太慢，以及手機上的邀請連結失效。",
                "每個新畫面都有說明文章草稿，還有三篇缺截圖。",
                "狀態頁和值班表都已為上線週準備好。",
                "Beta 用戶最常要求的功能是鍵盤快捷鍵。",
                "上線前十天凍結功能，之後只修 bug。",
                "執行手冊列出如果註冊失敗，要依序聯絡誰。",
            ),
            bullets=(
                "修好手機上的邀請連結", "負責人：{person}；{date} 前完成", "用最終版本錄示範影片", "演練回滾",
                "{weekday}寄出 beta 通知信", "更新狀態頁範本", "在慢速網路下測試新手引導", "上線前 {n} 天凍結文案",
            ),
            queries=("上線阻礙", "beta 新手引導回饋", "帳務遷移進度", "版本說明", "上線標記 bug"),
            table=_Table(
                "上線追蹤",
                ("工作項目", "負責人", "狀態", "到期", "未結項目"),
                ("登陸頁", "定價頁", "新手引導信", "媒體資料包", "示範影片", "說明中心", "帳務遷移"),
                ("person", "status", "date", "tiny_count"),
            ),
        ),
        _Topic(
            key="support",
            lead="theo",
            helpers=("omar", "sam"),
            asks=(
                ("這週客戶抱怨最多的是什麼？",
                 "這週的工單大多是匯出和行事曆同步，兩者的原因都已經查到。"),
                ("幫我回覆那位匯出失敗兩次的客戶。",
                 "回覆只道歉一次，說明原因，並附上修正上線前的暫時解法。"),
                ("拉出最近幾週的客服指標，看我們跟不跟得上。",
                 "平日跟得上，週末的首次回覆時間是弱點，待處理工單增加了 {n} 張。"),
                ("把前三大工單主題寫成說明中心文章。",
                 "我從前三大工單主題寫了三篇文章，並從回覆範本連過去。"),
                ("看一下「{doc}」裡的回覆範本，把聽起來像機器人的改掉。",
                 "我改寫了 {n} 個回覆範本，讓它們像真人，也刪掉重複的道歉。"),
                ("有客戶在 {date} 的服務中斷後要求退款，我們的政策是什麼？",
                 "我們的政策是按受影響天數比例退款，這位客戶會拿回 {small_money}。"),
                ("哪些 bug 產生最多工單？",
                 "匯出 bug 產生最多工單，其次是改過時區後的行事曆同步。"),
                ("準備團隊會議要用的每週客服摘要。",
                 "每週摘要準備好了：工單量、前三大主題，以及週末班的一項流程調整。"),
            ),
            docs=("客服回覆範本", "退款政策", "每週客服摘要", "升級處理指南", "已知問題", "服務中斷檢討 {date}", "說明中心待辦"),
            lines=(
                "這週大部分工單和匯出、行事曆同步有關。",
                "匯出失敗只發生在檔案超過 {n} 千個的工作區。",
                "服務中斷的退款按受影響天數比例計算，不會退整個月。",
                "只要 bug 影響超過一位客戶或任何資料，就升級給工程。",
                "回覆範本要像真人寫的：簡短、具體，不要每句都道歉。",
                "週末只有一個人值班，首次回覆時間的中位數上升。",
                "已知問題會公開列出，有暫時解法的話一併附上。",
                "工單被轉手超過一次，滿意度就會下降。",
                "註冊後改過時區的帳號，行事曆同步會失敗。",
                "客戶確認後，或連續五天沒回應，我們才結案。",
                "服務中斷檢討是公開的，列出我們承諾的三項修正。",
                "說明中心沒有搜尋結果的關鍵字，是新文章點子的最好來源。",
            ),
            bullets=(
                "重寫匯出失敗的回覆範本", "負責人：{person}；{date} 前完成", "補上行事曆同步的暫時解法",
                "工單依功能標記，不依客戶", "每{weekday}檢查被轉手的工單", "在中斷回覆範本裡附上檢討連結",
                "從無結果搜尋中新增 {n} 篇文章",
            ),
            queries=("匯出失敗", "行事曆同步", "中斷退款", "轉手工單", "說明中心無結果"),
            table=_Table(
                "客服指標",
                ("週次", "工單數", "首次回覆", "解決時間", "滿意度", "待處理"),
                ("@weeks",),
                ("count", "hours", "long_hours", "score", "small_count"),
            ),
        ),
        _Topic(
            key="finance",
            lead="sam",
            helpers=("omar", "mina"),
            asks=(
                ("以目前的燒錢速度，我們還有多少跑道？",
                 "以目前的燒錢速度，我們大約還有 {n} 個月的跑道，不含新營收。"),
                ("拉出上一季各類別的支出，標出異常的地方。",
                 "支出大致符合預算，只有工具超支 {pct}。"),
                ("哪些軟體訂閱可以取消？",
                 "有 {n} 個訂閱六十天沒人用，可以取消，每月省下約 {money}。"),
                ("準備每月投資人更新要用的數字。",
                 "投資人更新沿用上個月的五個數字，另加一行招募進度。"),
                ("確認上個月的發票都付清了。",
                 "除了一張以外發票都付清了，逾期的是 {customer}。"),
                ("在人數不變的前提下，擬下一季的預算。",
                 "預算草稿維持人數不變，廣告略減，並加了一行研討會差旅。"),
                ("把營收和「{doc}」裡的計畫比較一下。",
                 "營收比計畫超前 {pct}，主要來自年繳預付，這會讓第一季看起來比較好。"),
                ("今年外包花了多少？",
                 "今年外包支出是 {money}，大部分在工程師到職前。"),
            ),
            docs=("{year} 年預算", "投資人更新草稿", "軟體訂閱清單", "現金流預測", "營收計畫", "外包支出", "報帳規定"),
            lines=(
                "薪資大約佔每月支出的三分之二，其餘大多是工具和廣告。",
                "我們用保守情境規劃，假設營收每季成長 {pct}。",
                "訂閱每季檢查一次，六十天沒用的就取消。",
                "超過 {money} 的發票需要第二位核准人。",
                "投資人更新在每月第一週寄出，固定五個數字。",
                "招募期間外包支出上升，職缺補滿後應該會下降。",
                "廣告預算每月設定，不會累積到下個月。",
                "現金放在兩家銀行；營運帳戶足以支應三個月的支出。",
                "報帳要在次月五號前交。",
                "預付的年繳方案會讓第一季看起來比實際好。",
                "和預算差距超過 {pct} 的項目，都要附一段簡短說明。",
            ),
            bullets=(
                "取消沒在用的設計工具席次", "負責人：{person}；{date} 前完成", "催收 {customer} 逾期的發票",
                "把廣告預算檢討移到{weekday}", "加一行研討會差旅", "檢查 {n} 張發票的匯率換算",
            ),
            queries=("跑道", "軟體訂閱", "逾期發票", "外包支出", "投資人更新"),
            table=_Table(
                "每月支出",
                ("月份", "營收", "薪資", "工具", "廣告", "淨燒錢"),
                ("@months",),
                ("big_money", "big_money", "money", "money", "big_money"),
            ),
        ),
    ),
    facts=(
        _FactText(
            "team_price", "pricing", "29 美元",
            "我們決定 Team 方案每月 29 美元。",
            "收到：Team 方案每月 29 美元。",
            "我們之前說好的 Team 方案價格是多少？", "合作夥伴的信要用。",
            "我把我們說好的 Team 方案價格放進「{doc}」，並留言請 Sam 在寄出前確認。",
            "Team 方案價格",
        ),
        _FactText(
            "target_customer", "marketing", "自由接案設計師",
            "記住：我們的目標客群是自由接案設計師。",
            "了解：目標客群是自由接案設計師，之後的文案都以他們為主。",
            "我們的目標客群是誰來著？", "明天要跟代理商簡報。",
            "我以我們選定的目標客群重寫了「{doc}」的開頭，例子也換成他們工作上的情境。",
            "目標客群",
        ),
        _FactText(
            "launch_deadline", "launch", "5 月 4 日",
            "上線期限是 5 月 4 日。",
            "了解：整個計畫都從 5 月 4 日往回排。",
            "上線期限是哪一天？", "我想對一下時程。",
            "我依照我們訂的上線期限往回排了「{doc}」的時程，有兩項很緊。",
            "上線期限",
        ),
        _FactText(
            "product_name", "launch", "Lumen Desk",
            "產品名稱就定為 Lumen Desk，不再討論。",
            "好，就叫 Lumen Desk，我會更新所有草稿。",
            "我們最後定案的產品名稱是什麼？", "媒體資料包要用。",
            "我把「{doc}」裡的名稱全部換成定案的產品名稱，還標出兩張仍是舊名稱的截圖。",
            "產品名稱",
        ),
        _FactText(
            "hiring_budget", "hiring", "18 萬美元",
            "這半年的招募預算是 18 萬美元，全部含在內。",
            "收到：這半年 18 萬美元，包含獵才費用。",
            "這半年我們有多少招募預算？", "我在規劃接下來兩個 offer。",
            "我用我們說好的招募預算檢查了「{doc}」的計畫；只要 offer 落在中間值，兩個職缺都放得下。",
            "招募預算",
        ),
        _FactText(
            "promo_code", "marketing", "LAUNCH15",
            "上線優惠碼是 LAUNCH15：前三個月打 85 折。",
            "收到：LAUNCH15，只適用前三個月。",
            "上線要用哪個優惠碼？", "要放進 beta 通知信。",
            "我把我們選定的上線優惠碼加進「{doc}」，也確認折扣三個月後就會停止。",
            "上線優惠碼",
        ),
        _FactText(
            "competitor", "marketing", "Northwind Studio",
            "我們的定位對手是 Northwind Studio，不是那些大型套裝軟體。",
            "了解：比較時以 Northwind Studio 為主。",
            "我們決定要對標哪個競爭對手？", "我在寫比較頁。",
            "我在「{doc}」裡以我們選定的競爭對手來做比較，大型套裝軟體就不放了。",
            "競品定位",
        ),
        _FactText(
            "support_sla", "support", "4 小時內",
            "我們承諾企業客戶 4 小時內首次回覆。",
            "收到：企業客戶的工單 4 小時內首次回覆，週末也一樣。",
            "我們對企業客戶承諾的首次回覆時間是多久？", "我在檢查週末的值班表。",
            "我用我們對企業客戶承諾的首次回覆時間檢查了「{doc}」；週末值班是風險。",
            "企業客戶首次回覆",
        ),
    ),
    steps={
        "read_document": ("我先讀最新版本。", "打開文件看一下。", "先看目前的草稿。", ""),
        "search_documents": ("我先看看我們手上已經有的資料。", "先搜尋一下文件。", ""),
        "query_analytics": ("先把數字拉出來。", "我抓一下最新數據。", ""),
        "list_documents": ("看一下資料夾裡有什麼。", ""),
        "write_document": ("把草稿存起來。", "我先存檔，方便你修改。", ""),
    },
    closings=(
        "要不要請 {person} 再看一次？", "草稿已存成「{doc}」。", "如果要一句話版本，我可以再縮短。",
        "{weekday}數字更新後我會再確認一次。", "如果想看表格版本，跟我說。",
    ),
    comments=(
        "{person}：同意，但{weekday}的同步會後再檢討一次。", "{person}：決定前可以先給個數字嗎？",
        "{person}：我補了兩個上一季的例子。", "{person}：這和客戶在電話裡說的一致。",
        "{person}：提醒一下，法務審閱還沒完成。",
    ),
    open_questions=("最終版本由誰簽核？", "發出前需要法務審閱嗎？", "要不要等季度檢討後再說？", "樣本數夠我們做決定嗎？", "後續由哪個團隊負責？"),
    headings=("背景", "重點", "數字", "留言", "待解問題"),
    edited="最後編輯：{date}，{person}",
    search_header="「{query}」的搜尋結果（{k} / {total} 筆）：",
    search_item="{i}. {title}（{folder}，{date} 由 {person} 更新）\n   ……{snippet}……",
    list_header="{folder} 資料夾的文件（{k} 份）：",
    list_item="- {title} · {person} · {date} 更新 · {size} KB",
    saved="已儲存「{title}」（第 {v} 版，{chars} 字），並分享給 {person}。",
    table_footer="資料來源：資料倉儲，{date} 更新。",
    periods=("過去 30 天", "Q{q}", "過去 6 週", "{month}"),
    folders={"marketing": "行銷", "pricing": "定價", "hiring": "人資", "launch": "上線", "support": "客服", "finance": "財務"},
    months=tuple(f"{m} 月" for m in range(1, 13)),
    weekdays=("週一", "週二", "週三", "週四", "週五"),
    customers=("Harbor & Vine", "清水牙醫", "潮汐建築", "苔蘚設計", "晴光補習班", "橡木法律事務所"),
    roles=("後端工程師", "產品設計師", "客戶成功主管", "成長行銷", "資料分析師", "客服專員"),
    statuses=("進度正常", "有風險", "已完成", "卡住", "未開始"),
    money="{value:,} 美元",
    hours="{value:.1f} 小時",
    days="{value} 天",
    space="",
    doc_lines=(10, 13),
    doc_bullets=(4, 7),
    search_results=(7, 10),
    answer_lines=(2, 4),
    highlights=(3, 5),
    asides=("{weekday}的檢討會要用。", "簡短就好。", "Sam 昨天問過這個。", "先不用修飾。", "需要數字可以找 {person}。", "我今天想寄出。"),
)

_TEXT = {"en": _EN, "zh": _ZH}
_TOOLS = ("read_document", "search_documents", "query_analytics", "list_documents")
_TOOL_WEIGHTS = (40, 22, 30, 8)


class _Slots(dict):
    """Fills {slot} placeholders on demand, so a template draws only the values it uses."""

    def __init__(self, maker: _Maker, topic: _Topic) -> None:
        super().__init__()
        self.maker = maker
        self.topic = topic

    def __missing__(self, key: str) -> str:
        value = self.maker.slot(key, self.topic)
        self[key] = value
        return value


class _Maker:
    """One conversation's generator: its random stream, language and clock."""

    def __init__(self, n_tasks: int, language: str, seed: int) -> None:
        if language not in _TEXT:
            raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}")
        if n_tasks < 1:
            raise ValueError("a conversation needs at least one task")
        self.n = n_tasks
        self.language = language
        self.text = _TEXT[language]
        self.rng = random.Random(seed)
        # Ids come from their own stream: the text does not change if id generation does.
        self.ids = random.Random(f"bench-context-ids:{seed}:{language}:{n_tasks}")
        self.clock = START
        self.today = START
        self.forbidden: tuple[str, ...] = tuple(fact.needle for fact in self.text.facts)
        self.topics = {topic.key: topic for topic in self.text.topics}

    # Values ------------------------------------------------------------------

    def fill(self, template: str, topic: _Topic) -> str:
        return template.format_map(_Slots(self, topic))

    def slot(self, key: str, topic: _Topic) -> str:
        rng, text = self.rng, self.text
        if key == "money":
            return text.money.format(value=rng.randrange(12, 960) * 50)
        if key == "big_money":
            return text.money.format(value=rng.randrange(40, 900) * 500)
        if key == "small_money":
            return text.money.format(value=rng.randrange(12, 240))
        if key == "pct":
            return f"{rng.randint(3, 42)}%"
        if key == "rate":
            return f"{rng.uniform(0.6, 12.5):.1f}%"
        if key == "n":
            return str(rng.randint(3, 14))
        if key == "big":
            return f"{rng.randint(1_200, 58_000):,}"
        if key == "date":
            return (self.today - timedelta(days=rng.randint(1, 40))).date().isoformat()
        if key == "person":
            return NAMES[rng.choice(COWORKERS)]
        if key == "month":
            return rng.choice(text.months)
        if key == "weekday":
            return rng.choice(text.weekdays)
        if key == "q":
            return str(rng.randint(1, 4))
        if key == "h":
            return str(rng.randint(1, 2))
        if key == "v":
            return str(rng.randint(2, 7))
        if key == "year":
            return str(self.today.year + rng.randint(0, 1))
        if key == "customer":
            return rng.choice(text.customers)
        if key == "role":
            return rng.choice(text.roles)
        if key == "doc":
            return self.fill(rng.choice(topic.docs), topic)
        raise KeyError(key)

    def value(self, kind: str) -> str:
        rng, text = self.rng, self.text
        if kind == "sessions":
            return f"{rng.randint(800, 42_000):,}"
        if kind == "count":
            return f"{rng.randint(12, 2_400):,}"
        if kind == "small_count":
            return str(rng.randint(4, 60))
        if kind == "tiny_count":
            return str(rng.randint(0, 6))
        if kind == "rate":
            return f"{rng.uniform(0.6, 12.5):.1f}%"
        if kind == "money":
            return text.money.format(value=rng.randrange(8, 400) * 50)
        if kind == "big_money":
            return text.money.format(value=rng.randrange(40, 900) * 500)
        if kind == "small_money":
            return text.money.format(value=rng.randrange(12, 240))
        if kind == "days":
            return text.days.format(value=rng.randint(4, 61))
        if kind == "hours":
            return text.hours.format(value=rng.uniform(0.5, 9.5))
        if kind == "long_hours":
            return text.hours.format(value=rng.uniform(6.0, 60.0))
        if kind == "score":
            return f"{rng.uniform(3.6, 4.9):.1f}"
        if kind == "status":
            return rng.choice(text.statuses)
        if kind == "person":
            return NAMES[rng.choice(COWORKERS)]
        if kind == "date":
            return (self.today + timedelta(days=rng.randint(2, 45))).date().isoformat()
        raise KeyError(kind)

    def clean(self, make: Callable[[], str]) -> str:
        """make() again until its text holds no planted needle (deterministic: same stream)."""
        for _ in range(100):
            text = make()
            if not any(needle in text for needle in self.forbidden):
                return text
        raise RuntimeError("could not generate text free of planted needles")

    def pick(self, pool: Sequence[str], k: int) -> list[str]:
        return self.rng.sample(list(pool), min(k, len(pool)))

    # Tool results -------------------------------------------------------------

    def document(self, topic: _Topic, title: str) -> str:
        t, rng = self.text, self.rng
        context, notes, numbers, comments, questions = t.headings
        parts = [f"# {title}", self.fill(t.edited, topic), ""]
        lines = self.pick(topic.lines, rng.randint(*t.doc_lines))
        parts += [f"## {context}", t.space.join(self.fill(line, topic) for line in lines), ""]
        parts += [f"## {notes}", *(f"- {self.fill(b, topic)}" for b in self.pick(topic.bullets, rng.randint(*t.doc_bullets))), ""]
        if rng.random() < 0.9:
            parts += [f"## {numbers}", self.table(topic, rows=rng.randint(3, 6)), ""]
        parts += [f"## {comments}", *(self.fill(c, topic) for c in self.pick(t.comments, rng.randint(1, 3))), ""]
        parts += [f"## {questions}", *(f"- {q}" for q in self.pick(t.open_questions, rng.randint(1, 2)))]
        return "\n".join(parts)

    def table(self, topic: _Topic, rows: int | None = None) -> str:
        spec, rng = topic.table, self.rng
        if spec.rows == ("@weeks",):  # the last six ISO weeks
            weeks = [(self.today - timedelta(weeks=i)).isocalendar() for i in range(5, -1, -1)]
            labels = [f"{year}-W{week:02d}" for year, week, _ in weeks]
        elif spec.rows == ("@months",):  # the last six months
            months = [self.today.year * 12 + self.today.month - 1 - i for i in range(5, -1, -1)]
            labels = [f"{month // 12}-{month % 12 + 1:02d}" for month in months]
        else:
            labels = list(spec.rows)
        if rows is not None:
            start = rng.randint(0, max(0, len(labels) - rows))
            labels = labels[start : start + rows]
        lines = ["| " + " | ".join(spec.columns) + " |", "|" + "---|" * len(spec.columns)]
        for label in labels:
            lines.append("| " + " | ".join([label, *(self.value(kind) for kind in spec.kinds)]) + " |")
        return "\n".join(lines)

    def analytics(self, topic: _Topic, period: str) -> str:
        t = self.text
        highlights = [f"- {self.fill(line, topic)}" for line in self.pick(topic.lines, self.rng.randint(*t.highlights))]
        return "\n".join([f"{topic.table.title} · {period}", self.table(topic), *highlights, self.fill(t.table_footer, topic)])

    def search(self, topic: _Topic, query: str) -> str:
        t, rng = self.text, self.rng
        snippets = self.pick(topic.lines, rng.randint(*t.search_results))
        k = len(snippets)
        items = [
            t.search_item.format(
                i=i,
                title=self.fill(rng.choice(topic.docs), topic),
                folder=t.folders[topic.key],
                date=self.slot("date", topic),
                person=self.slot("person", topic),
                snippet=self.fill(snippet, topic),
            )
            for i, snippet in enumerate(snippets, start=1)
        ]
        return "\n".join([t.search_header.format(query=query, k=k, total=k + rng.randint(0, 30)), *items])

    def listing(self, topic: _Topic) -> str:
        t, rng = self.text, self.rng
        titles = self.pick(topic.docs, rng.randint(5, 8))
        items = [
            t.list_item.format(
                title=self.fill(title, topic), person=self.slot("person", topic), date=self.slot("date", topic),
                size=rng.randint(4, 180),
            )
            for title in titles
        ]
        return "\n".join([t.list_header.format(folder=t.folders[topic.key], k=len(items)), *items])

    def tool_step(self, topic: _Topic, name: str, query: str | None = None) -> tuple[dict, str]:
        """One tool call's arguments and its result."""
        rng, t = self.rng, self.text
        if name == "read_document":
            title = self.clean(lambda: self.fill(rng.choice(topic.docs), topic))
            return {"title": title}, self.clean(lambda: self.document(topic, title))
        if name == "search_documents":
            query = query or self.clean(lambda: self.fill(rng.choice(topic.queries), topic))
            return {"query": query}, self.clean(lambda: self.search(topic, query))
        if name == "query_analytics":
            period = self.fill(rng.choice(t.periods), topic)
            return {"report": topic.table.title, "period": period}, self.clean(lambda: self.analytics(topic, period))
        if name == "list_documents":
            return {"folder": t.folders[topic.key]}, self.clean(lambda: self.listing(topic))
        if name == "write_document":
            title = self.clean(lambda: self.fill(rng.choice(topic.docs), topic))
            content = self.clean(lambda: t.space.join(self.fill(line, topic) for line in self.pick(topic.lines, 3)))
            saved = t.saved.format(title=title, v=rng.randint(2, 9), chars=f"{len(content):,}", person=self.slot("person", topic))
            return {"title": title, "content": content}, saved
        raise KeyError(name)

    # Records ------------------------------------------------------------------

    def record(self, records: list[Record], *, turn: int, role: str, **fields) -> None:
        self.clock += timedelta(seconds=self.rng.randint(4, 75))
        record_id = str(uuid.UUID(int=self.ids.getrandbits(128), version=4))
        previous = records[-1].id if records else None
        records.append(Record(id=record_id, previous=previous, turn=turn, role=role, created_at=self.clock, **fields))

    def task(
        self, records: list[Record], turn: int, topic: _Topic, plants: Sequence[_FactText], ask: _FactText | None
    ) -> None:
        rng, t = self.rng, self.text
        self.clock += timedelta(minutes=rng.randint(6, 300))
        self.today = self.clock
        coworker = topic.lead if rng.random() < 0.75 else rng.choice(topic.helpers)

        if ask is not None:
            instruction = t.space.join([ask.question, ask.reason])
        else:
            template, reply = rng.choice(topic.asks)
            request = self.clean(lambda: self.fill(template, topic))
            asides = [self.fill(rng.choice(t.asides), topic)] if t.asides and rng.random() < 0.4 else []
            instruction = t.space.join([*(fact.statement for fact in plants), request, *asides])
        self.record(records, turn=turn, role="user", content=instruction)

        if ask is not None:
            tools = [rng.choice(("read_document", "search_documents"))] + (["read_document"] if rng.random() < 0.5 else [])
            work_topic = self.topics[ask.topic]
        else:
            count = rng.choices((1, 2, 3), weights=(15, 45, 40))[0]
            tools = rng.choices(_TOOLS, weights=_TOOL_WEIGHTS, k=count)
            if count > 1 and rng.random() < 0.3:
                tools[-1] = "write_document"
            work_topic = topic
        # Calls run one per step, or two side by side (parallel tool calls) a third of the time.
        steps: list[list[str]] = []
        for name in tools:
            if steps and len(steps[-1]) == 1 and name != "write_document" and rng.random() < 0.33:
                steps[-1].append(name)
            else:
                steps.append([name])
        call_number = 0
        for step in steps:
            calls, results = [], []
            for name in step:
                call_number += 1
                args, result = self.tool_step(work_topic, name, query=ask.search if ask is not None else None)
                calls.append(ToolCall(id=f"toolu_{turn}_{call_number}", name=name, args=args))
                results.append(result)
            lead_in = rng.choice(t.steps[step[0]])
            self.record(records, turn=turn, role="assistant", content=lead_in, coworker=coworker, tool_calls=tuple(calls))
            for call, result in zip(calls, results):
                self.record(records, turn=turn, role="tool", content=result, coworker=coworker, tool_call_id=call.id)

        if ask is not None:
            answer = self.clean(lambda: self.fill(ask.answer, work_topic))
        else:
            sentences = [fact.confirmation for fact in plants]
            sentences.append(self.clean(lambda: self.fill(reply, topic)))
            sentences += [self.clean(lambda line=line: self.fill(line, topic)) for line in self.pick(topic.lines, rng.randint(*t.answer_lines))]
            if rng.random() < 0.6:
                sentences.append(self.clean(lambda: self.fill(rng.choice(t.closings), topic)))
            answer = t.space.join(sentences)
        self.record(records, turn=turn, role="assistant", content=answer, coworker=coworker)


def _topic_schedule(maker: _Maker) -> list[_Topic]:
    """Topics in blocks of 3 to 6 tasks, rotating in a fixed order."""
    schedule: list[_Topic] = []
    index = 0
    topics = maker.text.topics
    while len(schedule) < maker.n:
        schedule += [topics[index % len(topics)]] * maker.rng.randint(3, 6)
        index += 1
    return schedule[: maker.n]


def _plant_turns(maker: _Maker, schedule: list[_Topic]) -> dict[str, int]:
    """Each fact's turn: spread over the first 10-30% of tasks, moved to a task of its own topic when one is near."""
    n = maker.n
    first = max(1, math.ceil(0.1 * n))
    last = max(first, math.floor(0.3 * n))
    facts = maker.text.facts
    used: set[int] = set()
    turns: dict[str, int] = {}
    for i, fact in enumerate(facts):
        target = first + round(i * (last - first) / max(1, len(facts) - 1))
        free = [t for t in range(first, last + 1) if t not in used]
        near = [t for t in free if schedule[t - 1].key == fact.topic and abs(t - target) <= max(2, (last - first) // len(facts))]
        # Its own topic nearby, else the nearest free task, else share a task (a short conversation).
        turn = min(near or free or [target], key=lambda t: (abs(t - target), t))
        turns[fact.key] = turn
        used.add(turn)
    return turns


def _ask_turns(maker: _Maker, plant_turns: dict[str, int]) -> dict[str, int]:
    """One question per fact, spread over the second half, in shuffled order; none where a fact is planted."""
    n = maker.n
    start = max(max(plant_turns.values()) + 1, math.ceil(0.5 * n))
    available = list(range(start, n + 1))
    keys = [fact.key for fact in maker.text.facts]
    maker.rng.shuffle(keys)
    k = min(len(keys), len(available))
    if k == 0:
        return {}
    chosen = [available[round(i * (len(available) - 1) / max(1, k - 1))] for i in range(k)] if k > 1 else [available[-1]]
    return dict(zip(keys[:k], chosen))


def generate_conversation(n_tasks: int, *, language: str = "en", seed: int = 0) -> Conversation:
    """A deterministic office conversation of n_tasks tasks: the same (n_tasks, language, seed), the same records."""
    maker = _Maker(n_tasks, language, seed)
    schedule = _topic_schedule(maker)
    plant_turns = _plant_turns(maker, schedule)
    ask_turns = _ask_turns(maker, plant_turns)
    facts_by_key = {fact.key: fact for fact in maker.text.facts}
    plants_at: dict[int, list[_FactText]] = {}
    for key, turn in plant_turns.items():
        plants_at.setdefault(turn, []).append(facts_by_key[key])
    asks_at = {turn: facts_by_key[key] for key, turn in ask_turns.items()}

    records: list[Record] = []
    for turn in range(1, n_tasks + 1):
        maker.task(records, turn, schedule[turn - 1], plants_at.get(turn, []), asks_at.get(turn))

    facts = tuple(
        PlantedFact(
            key=fact.key,
            needle=fact.needle,
            planted_turn=plant_turns[fact.key],
            question=fact.question,
            asked_turns=(ask_turns[fact.key],) if fact.key in ask_turns else (),
        )
        for fact in maker.text.facts
    )
    return Conversation(records=tuple(records), facts=facts, language=language)

