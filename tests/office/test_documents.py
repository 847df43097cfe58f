"""Office documents: versions, titles in any case, not-found suggestions, limits and the office boundary."""

import pytest
from django.db import IntegrityError
from django.urls import reverse

from office import documents
from office.models import Document, DocumentVersion
from sessions.models import Session, Task

pytestmark = pytest.mark.django_db


def write(office, title="Launch plan", content="Launch on May 4.", author="mina", **kwargs) -> DocumentVersion:
    return documents.write_document(office_id=office.pk, title=title, content=content, author=author, **kwargs)


def test_it_creates_a_document_with_its_first_version(office):
    version = write(office, kind="plan")

    document = version.document
    assert (document.title, document.kind, document.created_by) == ("Launch plan", "plan", "mina")
    assert (version.number, version.content, version.author) == (1, "Launch on May 4.", "mina")


def test_it_adds_a_version_and_reads_the_newest(office):
    write(office, content="Launch on May 4.")
    second = write(office, title="launch PLAN", content="Launch on May 11.", author="theo")

    assert second.number == 2
    assert Document.objects.count() == 1
    document, current = documents.read_document(office.pk, "LAUNCH plan")
    assert document.title == "Launch plan"  # the first spelling stays
    assert (current.number, current.content, current.author) == (2, "Launch on May 11.", "theo")
    _, first = documents.read_document(office.pk, "Launch plan", version=1)
    assert first.content == "Launch on May 4."


def test_it_keeps_the_kind_unless_one_is_given(office):
    write(office, kind="plan")
    write(office, content="v2")
    assert Document.objects.get().kind == "plan"

    write(office, content="v3", kind="spec")
    assert Document.objects.get().kind == "spec"


def test_it_does_not_add_a_version_for_the_same_text(office):
    first = write(office)
    again = write(office)

    assert again.pk == first.pk and again.unchanged
    assert DocumentVersion.objects.count() == 1


def test_it_records_the_task_that_wrote_a_version(office, direct_channel):
    task = Task.objects.create(session=Session.objects.create(channel=direct_channel), turn=1)

    version = write(office, source_task=task)

    assert version.source_task == task


def test_the_database_refuses_two_titles_differing_only_in_case(office):
    Document.objects.create(office=office, title="Launch plan", created_by="user")
    with pytest.raises(IntegrityError):
        Document.objects.create(office=office, title="LAUNCH PLAN", created_by="user")


def test_it_suggests_the_closest_titles_when_not_found(office):
    write(office, title="Launch plan")
    write(office, title="Pricing page copy", content="$29 a month.")
    write(office, title="Hiring notes", content="Two engineers.")

    with pytest.raises(documents.DocumentNotFound) as raised:
        documents.read_document(office.pk, "Lanch plan")

    assert raised.value.suggestions[0] == "Launch plan"
    assert "Hiring notes" not in raised.value.suggestions
    assert "Did you mean: “Launch plan”" in str(raised.value)


def test_it_says_which_versions_exist(office):
    write(office)
    with pytest.raises(documents.DocumentError, match="versions 1 to 1; there is no version 4"):
        documents.read_document(office.pk, "Launch plan", version=4)


def test_it_lists_newest_first_and_filters_by_title_or_current_text(office):
    write(office, title="Launch plan", content="Launch on May 4.")
    write(office, title="Pricing page copy", content="Team plan: $29 a month.")
    write(office, title="Launch plan", content="Launch on May 11.")

    listed = documents.list_documents(office.pk)
    assert [(d.title, d.current_number) for d in listed] == [("Launch plan", 2), ("Pricing page copy", 1)]
    assert [d.title for d in documents.list_documents(office.pk, "pricing")] == ["Pricing page copy"]
    assert [d.title for d in documents.list_documents(office.pk, "team $29")] == ["Pricing page copy"]
    # Only the current text counts: "May 4" was in version 1 only.
    assert documents.list_documents(office.pk, "May 4") == []
    assert [d.title for d in documents.list_documents(office.pk, "may 11")] == ["Launch plan"]


@pytest.mark.parametrize(
    ("title", "content", "kind", "problem"),
    [
        ("  ", "text", None, "needs a title"),
        ("x" * 201, "text", None, "at most 200 characters"),
        ("Plan", " \n ", None, "needs some content"),
        ("Plan", "x" * 100_001, None, "100,001 characters; a document holds at most 100,000"),
        ("Plan", "text", "poem", "Unknown kind “poem”; use one of: draft, spec, plan, copy, notes"),
    ],
)
def test_it_refuses_what_it_cannot_store(office, title, content, kind, problem):
    with pytest.raises(documents.DocumentError, match=problem):
        write(office, title=title, content=content, kind=kind)
    assert not Document.objects.exists()


def test_it_takes_a_document_of_exactly_the_limit(office):
    assert write(office, content="x" * documents.MAX_CONTENT_CHARS).number == 1


def test_it_never_crosses_offices(office, other_office):
    write(other_office, title="Globex secrets", content="Confidential.")

    assert documents.list_documents(office.pk) == []
    with pytest.raises(documents.DocumentNotFound) as raised:
        documents.read_document(office.pk, "Globex secrets")
    assert raised.value.suggestions == []  # not even the title leaks

    mine = write(office, title="Globex secrets", content="Ours.")
    assert mine.number == 1 and mine.document.office == office
    assert documents.read_document(other_office.pk, "Globex secrets")[1].content == "Confidential."


def test_admin_shows_a_document_with_its_versions_newest_first_read_only(admin_client, office):
    write(office, content="First draft.")
    write(office, content="Second draft.")
    document = Document.objects.get()

    assert admin_client.get(reverse("admin:office_document_changelist")).status_code == 200
    page = admin_client.get(reverse("admin:office_document_change", args=[document.pk])).content.decode()
    assert page.index("Second draft.") < page.index("First draft.")
    assert 'name="versions-0-content"' not in page  # shown, not editable
    version = document.versions.first()
    assert admin_client.get(reverse("admin:office_documentversion_change", args=[version.pk])).status_code == 200
    assert admin_client.get(reverse("admin:office_documentversion_add")).status_code == 403
