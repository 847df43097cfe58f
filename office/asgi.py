"""The ASGI application Daphne serves: Django for HTTP, Channels for websockets."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "office.settings")
# Django must be set up before anything imports models (the routes do).
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from office.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        # With DEBUG on, static files straight from the app folders (no collectstatic step for
        # `make run`); in production WhiteNoise serves the collected ones.
        "http": ASGIStaticFilesHandler(django_asgi_app) if settings.DEBUG else django_asgi_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
