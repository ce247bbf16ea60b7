"""The review-status rules are the library's (fastbioner.curate.curation), the app applies them."""

from __future__ import annotations

import pytest

from fastbioner.curate.curation import status_after_edit, status_after_tagging
from fastbioner.curate.project import DocStatus

ALL = (DocStatus.NEW, DocStatus.TAGGED, DocStatus.IN_REVIEW, DocStatus.REVIEWED)


@pytest.mark.parametrize("status", ALL)
def test_re_tagging_keeps_a_curators_status_unless_it_may_replace_the_curated_spans(status):
    curated = status in (DocStatus.IN_REVIEW, DocStatus.REVIEWED)
    assert status_after_tagging(status) is (status if curated else DocStatus.TAGGED)
    assert status_after_tagging(status, replace_curated=True) is DocStatus.TAGGED


@pytest.mark.parametrize("status", ALL)
def test_an_edit_puts_a_document_in_review_and_never_marks_it_reviewed(status):
    assert status_after_edit(status) is (DocStatus.REVIEWED if status is DocStatus.REVIEWED else DocStatus.IN_REVIEW)
