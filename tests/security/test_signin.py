"""Sign-in throttling: wrong passwords by the dozen lock that username at that address out for a while,
and the login page says so; a person at another address is not locked out with them."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fast_hasher(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def sign_in(password: str, address: str = "10.0.0.1", username: str = "bob"):
    return Client(REMOTE_ADDR=address).post("/accounts/login/", {"username": username, "password": password})


def test_it_locks_a_username_out_after_ten_wrong_passwords_even_with_the_right_one(bob, settings):
    bob.set_password("bob-password")
    bob.save()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert sign_in("wrong").status_code == 200  # the form again, "do not match"

    locked = sign_in("wrong")
    right_one = sign_in("bob-password")

    assert locked.status_code == 429
    assert right_one.status_code == 429, "the right password after 10 wrong ones must not get in"
    assert "Too many wrong passwords" in right_one.content.decode()
    assert "15 minutes" in right_one.content.decode()
    assert "sessionid" not in right_one.cookies


def test_it_lets_the_same_person_in_from_another_address(bob, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in("wrong")

    elsewhere = sign_in("bob-password", address="10.0.0.2")

    assert elsewhere.status_code == 302


def test_it_forgets_the_failures_after_a_successful_sign_in(bob, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in("wrong")
    assert sign_in("bob-password").status_code == 302

    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in("wrong")
    assert sign_in("bob-password").status_code == 302


def test_it_still_signs_in_through_the_test_client(bob):
    assert Client().login(username="bob", password="bob-password")
