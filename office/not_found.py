"""Every page that is not there is the office's own 404 page, also while DEBUG is on.

Django's debug 404 lists every URL pattern to anyone who mistypes a channel id, and a page
that is not the reader's must look exactly like one that does not exist. One middleware
instead of a decorator on each view: a new page cannot forget it.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

# Django's own pages keep their 404s (admin shows its own; static files are plain).
OWN_404_PREFIXES = ("/admin/", "/static/")


class FriendlyNotFoundMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        # An unknown address never reaches a view: its 404 is already a (debug) page here.
        if response.status_code == 404 and _is_page(request, response):
            return self.page(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, Http404) and not request.path.startswith(OWN_404_PREFIXES):
            return self.page(request)
        return None

    @staticmethod
    def page(request: HttpRequest) -> HttpResponse:
        response = render(request, "404.html", status=404)
        response.friendly = True
        return response


def _is_page(request: HttpRequest, response: HttpResponse) -> bool:
    """A 404 in HTML (a JSON endpoint's own 404 answers its script, not a person)."""
    html = response.get("Content-Type", "").startswith("text/html")
    return html and not request.path.startswith(OWN_404_PREFIXES) and not getattr(response, "friendly", False)
