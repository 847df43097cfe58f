"""WebSocket routes. The channel consumer (/ws/channels/<id>/) arrives with the browser UI."""

websocket_urlpatterns: list = []
