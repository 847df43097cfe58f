from django.contrib import admin
from django.urls import include, path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("o/<slug:slug>/", views.office, name="office"),
    path("c/<int:channel_id>/", views.channel, name="channel"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
]
