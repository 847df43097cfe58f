from django.apps import AppConfig


class OfficeConfig(AppConfig):
    name = "office"

    def ready(self) -> None:
        from . import checks  # noqa: F401  registers the system checks
