from django.contrib import admin
from django.urls import include, path

from . import channel_views, memory_views, search_views, usage_views, views

urlpatterns = [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("o/<slug:slug>/", views.office, name="office"),
    path("o/<slug:slug>/memory/", memory_views.memory, name="memory"),
    path("o/<slug:slug>/search/", search_views.office_search, name="office_search"),
    path("o/<slug:slug>/memory/<int:item_id>/edit/", memory_views.edit_item, name="memory_edit"),
    path("o/<slug:slug>/memory/<int:item_id>/pin/", memory_views.pin_item, name="memory_pin"),
    path("o/<slug:slug>/memory/<int:item_id>/delete/", memory_views.delete_item, name="memory_delete"),
    path("o/<slug:slug>/usage/", usage_views.usage, name="usage"),
    path("o/<slug:slug>/meetings/new/", channel_views.new_meeting, name="new_meeting"),
    path("o/<slug:slug>/projects/new/", channel_views.new_project, name="new_project"),
    path("t/<int:task_id>/", channel_views.open_task, name="open_task"),
    path("c/<int:channel_id>/edit/", channel_views.edit_project, name="edit_project"),
    path("c/<int:channel_id>/", views.channel, name="channel"),
    path("c/<int:channel_id>/sessions/<int:session_id>/", views.past_session, name="past_session"),
    path("c/<int:channel_id>/m/<uuid:message_id>/", search_views.message_in_context, name="message_in_context"),
    path("c/<int:channel_id>/tasks/<int:turn>/report/", views.task_report, name="task_report"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
]
