from django.apps import AppConfig


class OfficeConfig(AppConfig):
    name = "office"

    def ready(self) -> None:
        from . import checks  # noqa: F401  registers the system checks
        from . import membership  # noqa: F401  connects the signals that close a removed member's sockets
