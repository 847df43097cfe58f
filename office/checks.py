"""System checks that refuse configurations which would silently lose events."""

from django.conf import settings
from django.core.checks import Error, register

IN_MEMORY_LAYER = "channels.layers.InMemoryChannelLayer"


def uses_in_memory_layer() -> bool:
    return settings.CHANNEL_LAYERS["default"]["BACKEND"] == IN_MEMORY_LAYER


def out_of_process_worker_problem() -> str:
    """Why a worker in another process would lose events, or "" if it would not."""
    if uses_in_memory_layer():
        return (
            "The in-memory channel layer only reaches consumers in its own process, so "
            "events sent by a Celery worker would never reach a browser. Set REDIS_URL "
            "(channels_redis) or run background work in-process (BACKGROUND_WORK=inprocess)."
        )
    return ""


@register()
def check_background_work(app_configs, **kwargs) -> list[Error]:
    mode = settings.BACKGROUND_WORK
    if mode not in {"inprocess", "celery"}:
        return [
            Error(
                f"BACKGROUND_WORK is {mode!r}; it must be 'inprocess' or 'celery'.",
                id="office.E001",
            )
        ]
    problem = out_of_process_worker_problem()
    if mode == "celery" and problem:
        return [Error(problem, id="office.E002")]
    if mode == "celery" and settings.CELERY_BROKER_URL.startswith("memory://"):
        return [
            Error(
                "BACKGROUND_WORK=celery needs a real broker; the memory broker never "
                "reaches a worker in another process. Set REDIS_URL.",
                id="office.E003",
            )
        ]
    return []
