"""The Celery app. Settings come from Django's (namespace CELERY_).

A worker refuses to start with the in-memory channel layer: the events it
sends would reach no browser (the layer lives inside one process).
"""

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "office.settings")

app = Celery("office")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def refuse_in_memory_layer(**kwargs) -> None:
    from office.checks import out_of_process_worker_problem

    problem = out_of_process_worker_problem()
    if problem:
        raise RuntimeError(problem)
