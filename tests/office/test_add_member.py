"""add_member: how an operator lets a real account into an office in production (no demo user there)."""

import pytest
from django.core.management import CommandError, call_command

from office.models import Membership


@pytest.mark.django_db
def test_gives_an_account_the_office_once(office, charlie, capsys):
    call_command("add_member", charlie.username, office.slug)
    call_command("add_member", charlie.username, office.slug, "--role", "owner")

    membership = Membership.objects.get(office=office, user=charlie)
    assert membership.role == "owner"
    assert "already belongs" in capsys.readouterr().out


@pytest.mark.django_db
@pytest.mark.parametrize("username, slug, says", [("nobody", None, "no account"), (None, "nowhere", "no office")])
def test_unknown_account_or_office_is_a_clear_error(office, charlie, username, slug, says):
    with pytest.raises(CommandError, match=says):
        call_command("add_member", username or charlie.username, slug or office.slug)
    assert not Membership.objects.filter(office=office, user=charlie).exists()
