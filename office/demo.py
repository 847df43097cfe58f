"""The demo office "Acme": its coworkers and channels as plain data, and the one service that creates them.

Creates only what is missing, found by natural key; a row that exists is left as it is,
so edits people made (a persona rewritten, a channel renamed) survive a re-run.
"""

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from coworkers.models import Coworker
from office.models import Channel, Membership, Office

OFFICE = {"slug": "acme", "name": "Acme"}

COWORKERS = [
    {
        "slug": "mina",
        "name": "Mina",
        "role": "Marketing lead",
        "colour": "#e11d48",
        "skills": ["positioning", "copywriting", "launch planning", "campaigns", "SEO", "newsletter"],
        "persona": (
            "You are Mina, the marketing lead at Acme, a small company that makes the Acme Planner app "
            "for freelancers and small teams. You own positioning, launch plans, the website copy and the "
            "monthly newsletter, and you judge every idea by sign-ups and activation, not by applause. "
            "Before you write anything you ask who the reader is and what they should do next; when nobody "
            "has said, you state your assumption in one line and carry on. Your copy is short and concrete: "
            "active verbs, numbers instead of adjectives, never 'revolutionary' or 'seamless'. You offer two "
            "or three options with the one you recommend and why, and you flag any product claim engineering "
            "has not confirmed. When a request would blur the message or promise what the product does not "
            "do, you push back once, politely, and say what you would do instead."
        ),
    },
    {
        "slug": "theo",
        "name": "Theo",
        "role": "Software engineer",
        "colour": "#2563eb",
        "skills": ["Python", "Django", "PostgreSQL", "APIs", "code review", "estimates", "infrastructure"],
        "persona": (
            "You are Theo, the engineer who builds and runs the Acme Planner: a Django back end, a PostgreSQL "
            "database and a small React front end, deployed twice a week. You care about software that still "
            "works on Monday morning: correct first, then clear, then fast. Given a feature request you restate "
            "the problem in one sentence, propose the smallest change that solves it, and list what it touches "
            "and what could break. Your estimates are ranges with the main unknown named ('two to four days, "
            "depending on whether the calendar API sends webhooks'). You write short paragraphs and bullet "
            "lists, put code and commands in fenced blocks, and never claim to have run or tested something "
            "you have not. You say plainly when an idea is risky or a deadline unrealistic, and offer what "
            "could ship by then instead."
        ),
    },
    {
        "slug": "iris",
        "name": "Iris",
        "role": "Product designer",
        "colour": "#9333ea",
        "skills": ["UX research", "interaction design", "visual design", "prototyping", "accessibility"],
        "persona": (
            "You are Iris, Acme's product designer. You start from the person using the Planner: what they "
            "are trying to get done, where they get stuck, what they see first. You describe a design in words "
            "precise enough to build from: layout and hierarchy, every state (empty, loading, error, success), "
            "the exact words on buttons, and what changes on a phone. Accessibility is part of the work, not a "
            "later pass: text contrast of at least 4.5:1, a keyboard path through every flow, labels a screen "
            "reader can announce. You keep to Acme's design system (8-pixel spacing, the Inter typeface, the "
            "indigo accent) and say so when you break it, and why. When feedback is vague ('make it pop') you "
            "ask one sharp question, then sketch two directions with their trade-offs. You are warm and "
            "direct, and you critique the work, never the person."
        ),
    },
    {
        "slug": "sam",
        "name": "Sam",
        "role": "Account executive (sales)",
        "colour": "#16a34a",
        "skills": ["prospecting", "discovery calls", "demos", "proposals", "pricing", "CRM"],
        "persona": (
            "You are Sam, who sells the Acme Planner's Team plan to agencies and studios of 5 to 50 people. "
            "You think in pipeline: who the buyer is, what pain they named in their own words, what the next "
            "step is and by when. You write emails the way busy buyers read them: a subject line that says "
            "what is inside, three to five sentences, one clear ask. You never invent features, discounts or "
            "customer names; prices come from the current price list (Team: $12 a seat a month, billed "
            "yearly, with a 14-day trial) and any discount above 10% needs Omar's approval. You bring back "
            "what prospects actually say, quoting them where it matters, so marketing and engineering hear "
            "the real objections. You are upbeat, and you still call a deal at risk when it is."
        ),
    },
    {
        "slug": "omar",
        "name": "Omar",
        "role": "Operations manager",
        "colour": "#ea580c",
        "skills": ["planning", "process design", "budgets", "vendor management", "hiring logistics", "reporting"],
        "persona": (
            "You are Omar, Acme's operations manager: you keep the company running. Budgets, vendors and "
            "contracts, tools and access, hiring logistics and the weekly plan are yours. You turn a "
            "discussion into a checklist with an owner and a date on every line, and you follow up on the "
            "lines that slip. You are careful with money and with promises: for any spend you give the cost, "
            "the budget line it comes from and what it replaces, and nothing over $1,000 goes ahead without "
            "the founder's sign-off. You write numbered steps, and tables when comparing options; when a "
            "thread has produced any, you close with 'Decisions' and 'Open items'. You stay calm under "
            "pressure, and the first thing you ask about any request is its deadline."
        ),
    },
]

MAIN_CHANNEL = {"name": "main", "topic": "The whole team: instructions for everyone, @mention to pick who answers."}
ALL_HANDS_CHANNEL = {"name": "all-hands", "topic": "Announcements; every coworker may answer, briefly."}
PROJECT_CHANNEL = {
    "name": "launch",
    "topic": "Spring launch of the Acme Planner app",
    "members": ["mina", "theo", "iris"],
}

DEMO_USERNAME = "demo"
# Never a real account: created only when settings.DEBUG is on. In the demo it is also an admin (staff
# and superuser), so the budgets and spending limits can be tried in /admin/ with the same sign-in.
DEMO_PASSWORD = "demo"


@dataclass(frozen=True)
class SeedResult:
    """How many rows each step created; all zero when the demo office was already complete."""

    offices: int = 0
    coworkers: int = 0
    channels: int = 0
    users: int = 0
    memberships: int = 0
    # 1 when the demo user was made an admin (created so, or an older demo user promoted).
    admins: int = 0
    # True when DEBUG was off, so no demo user (and no demo login) was created.
    demo_user_skipped: bool = False
    # True when DEBUG was off and a demo login left from a development run was switched off.
    demo_login_disabled: bool = False

    @property
    def created(self) -> int:
        return self.offices + self.coworkers + self.channels + self.users + self.memberships + self.admins


@transaction.atomic
def seed_demo_office() -> SeedResult:
    """Create whatever is missing of the demo office; the demo user only when DEBUG is on."""
    office, offices = _get_or_create(Office, slug=OFFICE["slug"], defaults={"name": OFFICE["name"]})

    coworkers: dict[str, Coworker] = {}
    created_coworkers = 0
    for data in COWORKERS:
        fields = {key: value for key, value in data.items() if key != "slug"}
        coworkers[data["slug"]], created = _get_or_create(Coworker, office=office, slug=data["slug"], defaults=fields)
        created_coworkers += created

    created_channels = 0
    for coworker in coworkers.values():
        _, created = _get_or_create(
            Channel,
            office=office,
            kind=Channel.Kind.DIRECT,
            coworker=coworker,
            defaults={"name": coworker.name, "topic": f"1:1 with {coworker.name}, {coworker.role}"},
        )
        created_channels += created
    for kind, data in ((Channel.Kind.MAIN, MAIN_CHANNEL), (Channel.Kind.ALL_HANDS, ALL_HANDS_CHANNEL)):
        _, created = _get_or_create(Channel, office=office, kind=kind, defaults=data)
        created_channels += created
    project, created = _get_or_create(
        Channel,
        office=office,
        kind=Channel.Kind.PROJECT,
        name=PROJECT_CHANNEL["name"],
        defaults={"topic": PROJECT_CHANNEL["topic"]},
    )
    if created:
        # Members only on creation: someone may have changed who is on the project since.
        project.members.set([coworkers[slug] for slug in PROJECT_CHANNEL["members"]])
    created_channels += created

    if not settings.DEBUG:
        return SeedResult(
            offices=offices, coworkers=created_coworkers, channels=created_channels, demo_user_skipped=True,
            demo_login_disabled=disable_demo_login(),
        )

    user, users = _get_or_create(User, username=DEMO_USERNAME)
    if users:
        user.set_password(DEMO_PASSWORD)
        user.save(update_fields=["password"])
    admins = 0
    if not (user.is_staff and user.is_superuser):
        # Also a demo user from before the demo had an admin: "tune a budget in admin" must work for it too.
        user.is_staff = user.is_superuser = True
        user.save(update_fields=["is_staff", "is_superuser"])
        admins = 1
    _, memberships = _get_or_create(
        Membership, office=office, user=user, defaults={"role": Membership.Role.OWNER}
    )
    return SeedResult(
        offices=offices, coworkers=created_coworkers, channels=created_channels, users=users,
        memberships=memberships, admins=admins,
    )


def disable_demo_login() -> bool:
    """With DEBUG off, a demo account that still signs in with the demo password (left by a development
    run on this database) loses that password and any admin rights: demo/demo must never open a
    production office, let alone its admin. An account called demo with a password of its own is
    someone's real account and is left alone. True when there was one to switch off."""
    user = User.objects.filter(username=DEMO_USERNAME).first()
    if user is None or not user.check_password(DEMO_PASSWORD):
        return False
    user.set_unusable_password()
    user.is_staff = user.is_superuser = False
    user.save(update_fields=["password", "is_staff", "is_superuser"])
    return True


def _get_or_create(model, defaults: dict | None = None, **natural_key):
    """get_or_create returning (row, 1 or 0), so created rows can be summed."""
    row, created = model.objects.get_or_create(defaults=defaults or {}, **natural_key)
    return row, int(created)
