from django.apps import AppConfig


class WorkSessionsConfig(AppConfig):
    name = "sessions"
    # django.contrib.sessions owns the label "sessions" (and Channels' auth needs it).
    label = "work_sessions"
    verbose_name = "Sessions and history"
