"""WebSocket routes: the channel consumer. Imported by asgi.py only after Django is set up (the consumer imports models)."""

from django.urls import path

from .consumers import ChannelConsumer

websocket_urlpatterns: list = [
    path("ws/channels/<int:channel_id>/", ChannelConsumer.as_asgi()),
]
