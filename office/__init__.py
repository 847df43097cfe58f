"""The office: settings, URLs, the ASGI and Celery apps, offices, members and channels."""

from .celery import app as celery_app

__all__ = ("celery_app",)
