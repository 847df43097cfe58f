"""WebSocket routes: the channel consumer and the office (sidebar) consumer. Imported by asgi.py only after Django is set up (the consumers import models)."""

from django.urls import path

from .consumers import ChannelConsumer
from .office_consumer import OfficeConsumer

websocket_urlpatterns: list = [
    path("ws/channels/<int:channel_id>/", ChannelConsumer.as_asgi()),
    path("ws/offices/<int:office_id>/", OfficeConsumer.as_asgi()),
]
