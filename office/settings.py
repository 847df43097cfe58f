"""One settings file for every configuration.

No environment variables gives the embedded default (SQLite, in-memory channel
layer, background work in the server process); DATABASE_URL and REDIS_URL turn
on PostgreSQL, Redis and Celery workers. Every variable is listed in README.md.
"""

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in env(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)
# A development key only; production sets SECRET_KEY (issue "Production" makes it required).
SECRET_KEY = env("SECRET_KEY", "dev-only-insecure-key-change-me")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "http://127.0.0.1:8000,http://localhost:8000")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",  # Channels' AuthMiddlewareStack reads the Django session
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "office",
    "coworkers",
    "sessions",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "office.urls"
ASGI_APPLICATION = "office.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Database: SQLite in WAL mode by default; DATABASE_URL for PostgreSQL.
DATABASE_URL = env("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env("SQLITE_PATH", str(BASE_DIR / "db.sqlite3")),
            "OPTIONS": {
                # IMMEDIATE takes the write lock when a transaction starts, so two
                # writers queue on the busy timeout instead of one failing mid-way.
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            # A file, not :memory:, so tests exercise WAL and real cross-thread concurrency.
            "TEST": {"NAME": env("SQLITE_TEST_PATH", str(BASE_DIR / "test-db.sqlite3"))},
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Channels: in-memory for one process by default; Redis when REDIS_URL is set.
REDIS_URL = env("REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "capacity": 1000, "expiry": 60},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Background work: "inprocess" runs jobs in the server process (off the event
# loop); "celery" sends them to workers. The default follows REDIS_URL, and
# office.checks refuses "celery" with the in-memory layer (events would be lost).
BACKGROUND_WORK = env("BACKGROUND_WORK", "celery" if REDIS_URL else "inprocess")

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True  # a killed child's task is requeued, not lost
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = 600
CELERY_TASK_TIME_LIMIT = 660
# Above the longest task, or Redis hands an unacked task to a second worker.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hant", "Traditional Chinese")]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
}

# Models. With ANTHROPIC_API_KEY set, coworkers answer through Claude (ANTHROPIC_BASE_URL
# points the SDK at any compatible server); without it, the offline responder answers.
ANTHROPIC_TIMEOUT_SECONDS = float(env("ANTHROPIC_TIMEOUT_SECONDS", "120"))
ANTHROPIC_MAX_RETRIES = int(env("ANTHROPIC_MAX_RETRIES", "2"))
# US dollars per million tokens: input, cache write, cache read, output. A model that is
# not listed is recorded with its tokens and no cost.
MODEL_PRICES = {
    "claude-opus-4-1": {"input": 15.0, "cache_write": 18.75, "cache_read": 1.50, "output": 75.0},
    "claude-sonnet-4-6": {"input": 3.0, "cache_write": 3.75, "cache_read": 0.30, "output": 15.0},
    "claude-sonnet-4-5": {"input": 3.0, "cache_write": 3.75, "cache_read": 0.30, "output": 15.0},
    "claude-haiku-4-5": {"input": 1.0, "cache_write": 1.25, "cache_read": 0.10, "output": 5.0},
}

# A running task renews a lease as it works; a task whose lease ran out lost its worker
# and is resumed by the next delivery. Longer than the slowest single model call or tool.
TASK_LEASE_SECONDS = int(env("TASK_LEASE_SECONDS", "90"))
