"""Readers and writers, one module per format, and a registry by name and extension.

Each format module exposes ``read(path) -> Iterator[Document]`` and
``write(docs, path, **options)``; writers go through :func:`fastbioner.fileio.atomic_write`
so an output file is complete or absent.
"""
