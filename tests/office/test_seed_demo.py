"""seed_demo: the demo office a fresh `make run` opens on, and that running it again changes nothing."""

from io import StringIO

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import call_command

from coworkers.models import Coworker
from office.models import Channel, Membership, Office

pytestmark = pytest.mark.django_db


def seed() -> str:
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


def count_every_row() -> dict[str, int]:
    return {model._meta.label: model.objects.count() for model in apps.get_models()}


def test_it_creates_the_acme_office_with_five_distinct_coworkers(settings):
    settings.DEBUG = True
    seed()

    office = Office.objects.get(slug="acme")
    assert office.name == "Acme"
    coworkers = {c.slug: c for c in Coworker.objects.filter(office=office)}
    assert {"mina", "theo", "iris", "sam", "omar"} <= set(coworkers)
    assert len({c.role for c in coworkers.values()}) == len(coworkers)
    assert len({c.colour for c in coworkers.values()}) == len(coworkers)
    assert len({c.persona for c in coworkers.values()}) == len(coworkers)
    for coworker in coworkers.values():
        coworker.full_clean()  # a valid hex colour, a persona, a slug
        assert coworker.name in coworker.persona
        assert len(coworker.persona) > 400, f"{coworker.name}'s persona is a stub"
        assert coworker.skills and all(isinstance(skill, str) for skill in coworker.skills)


def test_it_gives_every_coworker_a_direct_channel_and_the_team_its_channels(settings):
    settings.DEBUG = True
    seed()

    office = Office.objects.get(slug="acme")
    for coworker in office.coworkers.all():
        direct = Channel.objects.get(office=office, kind=Channel.Kind.DIRECT, coworker=coworker)
        assert direct.name == coworker.name
    assert Channel.objects.get(office=office, kind=Channel.Kind.MAIN).name == "main"
    assert Channel.objects.get(office=office, kind=Channel.Kind.ALL_HANDS).name == "all-hands"
    launch = Channel.objects.get(office=office, kind=Channel.Kind.PROJECT)
    assert launch.name == "launch"
    assert launch.topic == "Spring launch of the Acme Planner app"
    assert set(launch.members.values_list("slug", flat=True)) == {"mina", "theo", "iris"}


def test_it_lets_the_demo_user_sign_in_when_debug_is_on(settings, client):
    settings.DEBUG = True
    output = seed()

    assert "demo / demo" in output
    assert client.login(username="demo", password="demo")
    demo = User.objects.get(username="demo")
    assert Membership.objects.get(user=demo, office__slug="acme").role == Membership.Role.OWNER


def test_it_creates_no_demo_user_when_debug_is_off(settings, client):
    settings.DEBUG = False
    output = seed()

    assert Office.objects.filter(slug="acme").exists()
    assert not User.objects.filter(username="demo").exists()
    assert not client.login(username="demo", password="demo")
    assert "no demo user" in output


def test_it_creates_nothing_the_second_time(settings):
    settings.DEBUG = True
    seed()
    before = count_every_row()

    output = seed()

    assert count_every_row() == before
    assert "nothing created" in output


def test_it_keeps_edits_people_made(settings, client):
    settings.DEBUG = True
    seed()
    Coworker.objects.filter(slug="mina").update(persona="You are Mina. Keep it short.")
    Channel.objects.get(name="launch").members.remove(Coworker.objects.get(slug="iris"))
    demo = User.objects.get(username="demo")
    demo.set_password("a-better-password")
    demo.save()

    seed()

    assert Coworker.objects.get(slug="mina").persona == "You are Mina. Keep it short."
    assert set(Channel.objects.get(name="launch").members.values_list("slug", flat=True)) == {"mina", "theo"}
    assert client.login(username="demo", password="a-better-password")


def test_it_fills_in_what_is_missing(settings):
    settings.DEBUG = True
    seed()
    Channel.objects.filter(kind=Channel.Kind.ALL_HANDS).delete()

    output = seed()

    assert Channel.objects.filter(kind=Channel.Kind.ALL_HANDS, name="all-hands").count() == 1
    assert "created 1 channel." in output


def test_the_demo_user_is_an_admin_only_when_debug_is_on(settings, client):
    settings.DEBUG = True
    output = seed()

    demo = User.objects.get(username="demo")
    assert demo.is_staff and demo.is_superuser
    assert "also an admin" in output
    client.login(username="demo", password="demo")
    assert client.get("/admin/").status_code == 200


def test_an_older_demo_user_becomes_an_admin_on_the_next_seed(settings):
    settings.DEBUG = True
    User.objects.create_user("demo", password="demo")

    output = seed()

    assert User.objects.get(username="demo").is_staff
    assert "1 admin" in output


def test_with_debug_off_no_account_is_made_staff(settings):
    settings.DEBUG = False
    seed()

    assert not User.objects.filter(is_staff=True).exists()
    assert not User.objects.filter(is_superuser=True).exists()


def test_with_debug_off_a_demo_login_left_from_development_is_switched_off(settings, client):
    settings.DEBUG = True
    seed()
    settings.DEBUG = False

    output = seed()

    demo = User.objects.get(username="demo")
    assert not demo.is_staff and not demo.is_superuser
    assert not client.login(username="demo", password="demo")
    assert "demo password and admin rights were switched off" in output


def test_with_debug_off_an_account_named_demo_with_its_own_password_is_left_alone(settings, client):
    settings.DEBUG = False
    User.objects.create_superuser("demo", password="a-real-password")

    seed()

    assert User.objects.get(username="demo").is_superuser
    assert client.login(username="demo", password="a-real-password")
