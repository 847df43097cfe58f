"""The ASGI application Daphne serves: Django for HTTP, Channels for websockets."""

import asyncio
import os
import sys

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "office.settings")
# Django must be set up before anything imports models (the routes do).
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from office import background  # noqa: E402
from office.backlog import WatchesBacklog  # noqa: E402
from office.origin import SameOriginValidator  # noqa: E402
from office.routing import websocket_urlpatterns  # noqa: E402
from office.socket_limit import SocketsPerPerson  # noqa: E402

application = ProtocolTypeRouter(
    {
        # With DEBUG on, static files straight from the app folders (no collectstatic step for
        # `make run`); in production WhiteNoise serves the collected ones.
        "http": ASGIStaticFilesHandler(django_asgi_app) if settings.DEBUG else django_asgi_app,
        "websocket": WatchesBacklog(
            SameOriginValidator(AuthMiddlewareStack(SocketsPerPerson(URLRouter(websocket_urlpatterns))))
        ),
    }
)


def stop_background_work_on_shutdown() -> None:
    """Under Daphne (`make run`), SIGTERM stops Twisted's reactor. Before it stops, the in-process
    jobs are wound down (background.shutdown: nothing new starts, running work gets a grace
    period), off the event loop, which keeps running meanwhile so a finishing reply still reaches
    the group. Without this the interpreter's exit shut the pool under a running task, which then
    failed its follow-up work, and waited for every queued reply."""
    if "daphne.server" not in sys.modules:
        return  # not served by Daphne (tests, a management command): nothing to hook
    from twisted.internet import defer, reactor

    def before_shutdown():
        loop = asyncio.get_event_loop()
        return defer.Deferred.fromFuture(asyncio.ensure_future(loop.run_in_executor(None, background.shutdown)))

    reactor.addSystemEventTrigger("before", "shutdown", before_shutdown)


stop_background_work_on_shutdown()


def _served_by_daphne() -> bool:
    # The daphne command (`make run`, or `python -m daphne`), not a test or a management command
    # that imports this module: daphne.server is imported by its app config in every process.
    command = os.path.normpath(sys.argv[0]) if sys.argv else ""
    return os.path.basename(command) == "daphne" or command.endswith(os.path.join("daphne", "__main__.py"))


def sweep_lost_work_in_process() -> None:
    """Celery beat sends lost work again in production (sessions.tasks.requeue_stalled_tasks); the
    embedded server has no beat, so it does the same itself: at start and every
    REQUEUE_EVERY_SECONDS. A reply cut off by a restart is resumed when the server is back, not
    when the person next writes in that conversation."""
    if not _served_by_daphne() or settings.BACKGROUND_WORK == "celery":
        return
    from sessions.tasks import requeue_stalled_tasks

    background.every(settings.REQUEUE_EVERY_SECONDS, requeue_stalled_tasks.enqueue)


sweep_lost_work_in_process()


def limit_requests_in_daphne() -> None:
    """Daphne reads a request's whole body before the app can refuse it, and waits for a slow one
    for ever (office/request_limit.py)."""
    if _served_by_daphne():
        from office.request_limit import limit_requests

        limit_requests(settings.MAX_REQUEST_BODY_BYTES, settings.REQUEST_ARRIVAL_SECONDS)


limit_requests_in_daphne()
