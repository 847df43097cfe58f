"""WebSocket routes: the channel consumer and the office (sidebar) consumer. Imported by asgi.py only after Django is set up (the consumers import models)."""

from channels.generic.websocket import AsyncWebsocketConsumer
from django.urls import path, re_path

from .consumers import ChannelConsumer
from .office_consumer import OfficeConsumer


class NoSuchSocket(AsyncWebsocketConsumer):
    """Any other path: refused before the handshake (the client sees a 403), where the router would
    raise "No route found" and log a traceback for every probe."""

    async def connect(self) -> None:
        await self.close()


websocket_urlpatterns: list = [
    path("ws/channels/<int:channel_id>/", ChannelConsumer.as_asgi()),
    path("ws/offices/<int:office_id>/", OfficeConsumer.as_asgi()),
    re_path(r"", NoSuchSocket.as_asgi()),
]
