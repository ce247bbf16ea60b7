"""Curation: edits to documents, all occurrences, concepts, relations, agreement between
curators and adjudication, projects and export."""
