from django.apps import AppConfig


class CoworkersConfig(AppConfig):
    name = "coworkers"
