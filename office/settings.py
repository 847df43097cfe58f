"""One settings file for every configuration.

No environment variables gives the embedded default (SQLite, in-memory channel
layer, background work in the server process); DATABASE_URL and REDIS_URL turn
on PostgreSQL, Redis and Celery workers. Every variable is listed in README.md.
"""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

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
SECRET_KEY = env("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        # Never a default in production: a known key lets anyone forge sessions.
        raise ImproperlyConfigured(
            "SECRET_KEY is required when DEBUG is off. Generate one with: "
            "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    SECRET_KEY = "dev-only-insecure-key-never-use-in-production"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")
# Pages of the office's own host and port need no entry (forms and websockets check the Origin
# against the Host). Only origins named here are trusted besides: a default list would let a page
# on 127.0.0.1:8000 open the sockets of an office served on another port.
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

# HTTPS: on by default when DEBUG is off. The office is then reached through a TLS
# proxy or load balancer that sets X-Forwarded-Proto; HTTPS=off serves plain HTTP
# (a trial of `make prod` on one machine, never the internet).
HTTPS = env_bool("HTTPS", not DEBUG)
if HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(env("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",  # Channels' AuthMiddlewareStack reads the Django session
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "axes",  # sign-in throttling: office/signin.py
    "office",
    "coworkers",
    "sessions",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # The database or Redis briefly away: a 503 page that says so, not a server error.
    "office.unavailable.UnavailableMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # No script but the office's own files, nothing sent elsewhere (office/content_policy.py).
    "office.content_policy.ContentSecurityPolicyMiddleware",
    # Any page that is not there (or not the reader's) is the office's own 404 page.
    "office.not_found.FriendlyNotFoundMiddleware",
    # Last, as django-axes asks: it turns a lockout into the login page that says so.
    "axes.middleware.AxesMiddleware",
]

if not DEBUG:
    # Serves the collected static files in production (hashed names, compressed, cached for
    # a year); with DEBUG on, asgi.py serves them from the app folders instead.
    MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")

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
# DATABASE_POOL_SIZE (make prod sets it): each process shares a pool of that many PostgreSQL
# connections among its threads, and a reply waiting on the model gives its connection back
# (sessions.pipeline.release_connection), so a worker's many reply threads need few connections.
DATABASE_POOL_SIZE = int(env("DATABASE_POOL_SIZE", "0"))
if DATABASE_URL and DATABASE_POOL_SIZE:
    # Django's pool checks each connection before handing it out (a restarted PostgreSQL's are dropped).
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_health_checks=True)}
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": DATABASE_POOL_SIZE,
        # A thread waits at most this long for a connection; past it the request fails as the
        # database being away (a 503 page, an `unavailable` frame), never a page that hangs. The
        # reply worker waits longer (make prod gives it WORKER_DATABASE_POOL_TIMEOUT): a burst of
        # replies starting at once queues for the pool, and a reply must wait its turn, not fail.
        "timeout": float(env("DATABASE_POOL_TIMEOUT", "5")),
    }
elif DATABASE_URL:
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
            # channels_redis with a blocking pool (office/layers.py): at most max_connections per
            # event loop, and a caller past that waits (up to pool_timeout) instead of failing.
            "BACKEND": "office.layers.PooledRedisChannelLayer",
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        # A read timeout well above channels_redis's 5 s BZPOPMIN: redis-py's default
                        # (5 s) is the same length, so an idle socket's wait could time out and close it.
                        "socket_timeout": 15,
                        "max_connections": int(env("CHANNEL_LAYER_CONNECTIONS", "50")),
                        "pool_timeout": 10,
                    }
                ],
                "capacity": 1000,
                # The sockets of one Daphne process share one Redis key ("specific.<process>!"),
                # and channels_redis counts capacity on that key: 1,000 between a process's 250
                # sockets was 4 waiting messages each, and a burst of 500 replies went over it.
                # group_send then drops the message and only logs "over capacity" at INFO: a
                # stored event is filled in from its seq, but a delta is gone, a hole in the
                # streaming reply (README, "Load test"). Expiry still bounds what piles up.
                "channel_capacity": {"specific.*": int(env("CHANNEL_PROCESS_CAPACITY", "50000"))},
                "expiry": 60,
            },
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
# One `celery beat` (make prod runs exactly one) sends lost task deliveries again: every
# REQUEUE_EVERY_SECONDS, the tasks queued for longer than STALLED_AFTER_SECONDS (a delivery the
# broker lost) or running on an expired lease (a worker that died).
STALLED_AFTER_SECONDS = int(env("STALLED_AFTER_SECONDS", "60"))
# The embedded server runs the same sweep itself, at start and as often (office/asgi.py).
REQUEUE_EVERY_SECONDS = float(env("REQUEUE_EVERY_SECONDS", "30"))
CELERY_BEAT_SCHEDULE = {
    "requeue-stalled-tasks": {
        "task": "sessions.tasks.requeue_stalled_tasks",
        "schedule": REQUEUE_EVERY_SECONDS,
    },
}
# Publishing while Redis is away: a few quick retries, then a clear failure, not a hang.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 3, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 1}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Sign-in throttling (django-axes): AXES_FAILURE_LIMIT wrong passwords for one username from one
# address lock that pair out for AXES_COOLOFF_TIME (a lockout of the username alone would let anyone
# lock a colleague out; of the address alone, a whole office behind one NAT). Attempts are kept in
# the database, which every Daphne process shares, in the embedded default and in production alike.
AUTHENTICATION_BACKENDS = ["office.signin.ThrottledBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = int(env("LOGIN_FAILURE_LIMIT", "10"))
AXES_COOLOFF_TIME = timedelta(minutes=int(env("LOGIN_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
AXES_LOCKOUT_CALLABLE = "office.signin.locked_out"
AXES_VERBOSE = False  # its start-up banner on every command and process says nothing an operator needs
# The address is REMOTE_ADDR (axes' default): behind the TLS proxy, Daphne's --proxy-headers puts
# the client's address there.

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
STATIC_ROOT = Path(env("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# The cache holds per-user rate limits, so every Daphne process must share it: Redis
# when REDIS_URL is set, this process's memory in the embedded default (one process).
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL, "KEY_PREFIX": "vo"}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s [%(process)d] %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
}

# Models. With ANTHROPIC_API_KEY set, coworkers answer through Claude (ANTHROPIC_BASE_URL
# points the SDK at any compatible server); without it, the offline responder answers.
ANTHROPIC_TIMEOUT_SECONDS = float(env("ANTHROPIC_TIMEOUT_SECONDS", "120"))
ANTHROPIC_MAX_RETRIES = int(env("ANTHROPIC_MAX_RETRIES", "2"))
# The Claude models, in this one place: which model does what, and each model's list price in US
# dollars per million tokens (input, 5-minute cache write, cache read, output; Anthropic's published
# prices on 2026-12-01). Everything else reads these: the context policies' model fields inherit
# REPLY_MODEL and SUMMARY_MODEL when empty, the router uses ROUTER_MODEL, and the cost of each call is
# priced here (a model that is not listed is recorded with its tokens and no cost: unknown is not free).
# "long_prompt": a model priced by prompt length charges those prices, on the whole call, when its
# prompt (input, cache writes and reads) is above `above_tokens`.
REPLY_MODEL = env("REPLY_MODEL", "claude-sonnet-4-6")
SUMMARY_MODEL = env("SUMMARY_MODEL", "claude-haiku-4-5")  # rolling summaries, memory, meeting notes
ROUTER_MODEL = env("ROUTER_MODEL", "claude-haiku-4-5")  # who answers in shared channels
MODEL_PRICES = {
    "claude-opus-5-5": {"input": 4.0, "cache_write": 5.0, "cache_read": 0.20, "output": 20.0},
    "claude-opus-5": {"input": 5.0, "cache_write": 6.25, "cache_read": 0.50, "output": 25.0},
    "claude-opus-4-8": {"input": 5.0, "cache_write": 6.25, "cache_read": 0.50, "output": 25.0},
    "claude-opus-4-7": {"input": 5.0, "cache_write": 6.25, "cache_read": 0.50, "output": 25.0},
    "claude-opus-4-6": {"input": 5.0, "cache_write": 6.25, "cache_read": 0.50, "output": 25.0},
    "claude-opus-4-5": {"input": 5.0, "cache_write": 6.25, "cache_read": 0.50, "output": 25.0},
    "claude-sonnet-5-5": {"input": 2.0, "cache_write": 2.50, "cache_read": 0.10, "output": 10.0},
    "claude-sonnet-5": {"input": 2.0, "cache_write": 2.50, "cache_read": 0.20, "output": 10.0},
    "claude-sonnet-4-6": {"input": 3.0, "cache_write": 3.75, "cache_read": 0.30, "output": 15.0},
    "claude-haiku-5-5": {
        "input": 0.10, "cache_write": 0.125, "cache_read": 0.01, "output": 0.50,
        "long_prompt": {"above_tokens": 100_000, "input": 0.50, "cache_write": 0.625, "cache_read": 0.05, "output": 2.50},
    },
    "claude-haiku-4-5": {"input": 1.0, "cache_write": 1.25, "cache_read": 0.10, "output": 5.0},
}

# A running task renews a lease as it works; a task whose lease ran out lost its worker
# and is resumed by the next delivery. Longer than the slowest single model call or tool.
TASK_LEASE_SECONDS = int(env("TASK_LEASE_SECONDS", "90"))
# Who answers: "auto" is Claude with ANTHROPIC_API_KEY, else the offline responder;
# "paced" streams a fixed reply at a fixed pace (load tests and demos of streaming).
MODEL_PROVIDER = env("MODEL_PROVIDER", "auto")
PACED_REPLY_CHARS = int(env("PACED_REPLY_CHARS", "400"))
PACED_CHUNK_MS = int(env("PACED_CHUNK_MS", "20"))

# Recall also searches by meaning (sessions.meaning: a small sentence-embedding model run on the
# CPU, about 15 ms per exchange when a task finishes); off, it searches by words alone.
MEANING_SEARCH = env_bool("MEANING_SEARCH", True)

# Per person, across all their tabs and channels: more instructions than this in a
# minute get a `rate_limited` error frame and are not stored.
INSTRUCTIONS_PER_MINUTE = int(env("INSTRUCTIONS_PER_MINUTE", "30"))
# And at most this many of one person's instructions may wait for their replies in one channel:
# a conversation answers in order, so in a shared channel one person sending as fast as the rate
# allows would put everyone else's instruction behind all of theirs.
WAITING_INSTRUCTIONS_PER_PERSON = int(env("WAITING_INSTRUCTIONS_PER_PERSON", "5"))
# The largest HTTP request body Daphne takes (office/request_limit.py); larger ones get 413 before
# they are read. The office's pages send forms of a few kB, and Django would refuse a form over
# its DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MiB) anyway, only after Daphne had read and held all of it.
MAX_REQUEST_BODY_BYTES = int(env("MAX_REQUEST_BODY_BYTES", str(2_621_440)))
# And the longest a request may take to arrive, first byte to last (a form of a few kB takes a
# second or two on a poor connection); a slower one gets 408 and its connection is closed.
REQUEST_ARRIVAL_SECONDS = float(env("REQUEST_ARRIVAL_SECONDS", "30"))
# Websockets one person may hold open in one server process (office/socket_limit.py).
SOCKETS_PER_PERSON = int(env("SOCKETS_PER_PERSON", "40"))
# Per person, the same way: "start a new conversation" more often than this in a minute gets a
# `rate_limited` error frame and starts nothing.
NEW_SESSIONS_PER_MINUTE = int(env("NEW_SESSIONS_PER_MINUTE", "10"))
# SIGTERM of a server running background work in-process (the embedded default): what is running
# gets this long to finish before it is asked to leave (and is resumed on the next start).
SHUTDOWN_GRACE_SECONDS = float(env("SHUTDOWN_GRACE_SECONDS", "10"))
# The embedded server's replies run on this many threads (upkeep on one more): a reply mostly
# waits on the model's stream, so a handful of people are answered at once, not one by one.
EMBEDDED_REPLY_THREADS = int(env("EMBEDDED_REPLY_THREADS", "8"))
