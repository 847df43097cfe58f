"""prepare_load: the load tool's accounts. Each client is a person of its own, in an office of its
own, who can sign in and see exactly one 1:1 channel; preparing again reuses everything."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from office.models import Channel, Office


def prepare(capsys, clients: int, prefix: str = "load") -> dict:
    call_command("prepare_load", "--clients", str(clients), "--prefix", prefix)
    return json.loads(capsys.readouterr().out)


@pytest.mark.django_db
def test_it_gives_each_client_a_person_an_office_and_a_channel_of_its_own(client, capsys):
    prepared = prepare(capsys, 3)

    names = [account["username"] for account in prepared["accounts"]]
    assert names == ["load-0001", "load-0002", "load-0003"]
    channels = [account["channel"] for account in prepared["accounts"]]
    assert len(set(channels)) == 3
    for account in prepared["accounts"]:
        assert client.login(username=account["username"], password=prepared["password"])
        user = User.objects.get(username=account["username"])
        visible = list(Channel.objects.visible_to(user).values_list("pk", "kind"))
        assert visible == [(account["channel"], "direct")]
        client.logout()


@pytest.mark.django_db
def test_preparing_again_reuses_the_accounts_and_only_the_new_password_works(client, capsys):
    first = prepare(capsys, 2)
    second = prepare(capsys, 3)

    assert second["accounts"][:2] == first["accounts"]
    assert Office.objects.filter(slug__startswith="load-").count() == 3
    assert Channel.objects.filter(office__slug__startswith="load-").count() == 3
    assert first["password"] != second["password"]
    assert not client.login(username="load-0001", password=first["password"])
    assert client.login(username="load-0001", password=second["password"])


@pytest.mark.django_db
def test_it_refuses_zero_clients():
    with pytest.raises(CommandError, match="at least 1"):
        call_command("prepare_load", "--clients", "0")
