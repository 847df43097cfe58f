from django.apps import AppConfig


class WorkSessionsConfig(AppConfig):
    name = "sessions"
    # django.contrib.sessions owns the label "sessions" (and Channels' auth needs it).
    label = "work_sessions"
    verbose_name = "Sessions and history"

    def ready(self) -> None:
        # Connects the jobs to what the modules below them announce (a stored instruction starts
        # its reply): every process that stores instructions must start their work.
        from . import tasks  # noqa: F401
