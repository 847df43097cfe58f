"""Every page that is not there is the office's own 404 page, also while DEBUG is on.

Django's debug 404 lists every URL pattern to anyone who mistypes a channel id, and a page
that is not the reader's must look exactly like one that does not exist. One middleware
instead of a decorator on each view: a new page cannot forget it.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

# Django's own pages keep their 404s (admin shows its own; static files are plain).
OWN_404_PREFIXES = ("/admin/", "/static/")


class FriendlyNotFoundMiddleware:
    """Replaces any HTML 404 on the way out: a view's Http404 and an unknown address both reach
    here already turned into a response (Django's debug page while DEBUG is on). A JSON
    endpoint's own 404 answers its script, not a person, and is left alone."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        html = response.get("Content-Type", "").startswith("text/html")
        if response.status_code == 404 and html and not request.path.startswith(OWN_404_PREFIXES):
            return render(request, "404.html", status=404)
        return response
