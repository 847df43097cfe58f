"""When a service the office depends on is briefly away (PostgreSQL, or Redis as cache, broker or
channel layer): the errors that mean it, what a person is told, and the middleware that turns such
an error in a page request into a 503 page instead of a server error. Must not import models.

Nothing is half-written when this happens: writes run in transactions, which roll back.
"""

from __future__ import annotations

import logging

import kombu.exceptions
import redis.exceptions
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils.deprecation import MiddlewareMixin

log = logging.getLogger(__name__)

# The database or Redis cannot be reached (or dropped the connection mid-way).
ERRORS: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    kombu.exceptions.OperationalError,
)

# Also the `detail` of the websocket's `unavailable` error frame. True whatever failed: an
# instruction refused with it was not stored (its transaction rolled back, or never began).
DETAIL = "The office is briefly unavailable, so this was not sent. Please try again in a moment."
RETRY_AFTER_SECONDS = 10


class UnavailableMiddleware(MiddlewareMixin):
    """A page request that fails because a service is away gets a 503 page saying so."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, ERRORS):
            return None
        log.warning("%s %s: service unavailable: %s", request.method, request.path, exception)
        # Rendered without the request: its context would read the signed-in person (the base
        # template's data-me), from the database that is away, and wait out the pool once more.
        response = HttpResponse(render_to_string("503.html", {"retry_after": RETRY_AFTER_SECONDS}), status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        response["Cache-Control"] = "no-store"
        return response
