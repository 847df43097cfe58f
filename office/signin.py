"""Sign-in throttling (django-axes): after AXES_FAILURE_LIMIT wrong passwords for one username from
one address, that pair is locked out for AXES_COOLOFF_TIME, and the login page says so.
"""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from django.contrib.auth.forms import AuthenticationForm
from django.shortcuts import render


class ThrottledBackend(AxesStandaloneBackend):
    """Axes' backend, except for an `authenticate` without a request (Django's test client's
    `login`, a shell): no address to count, and nothing a browser can reach, so it is left to
    ModelBackend instead of raising."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def locked_out(request, original_response=None, credentials=None):
    """The login page again, saying why the right password will not work either for a while."""
    from django.conf import settings

    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    form = AuthenticationForm(request, initial={"username": (credentials or {}).get("username", "")})
    context = {"form": form, "locked_out": True, "cooloff_minutes": minutes, "next": request.POST.get("next", "")}
    return render(request, "registration/login.html", context, status=429)
