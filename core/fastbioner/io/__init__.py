"""Documents and files: the document model, text and label handling, atomic file writes,
and one module per file format (``formats/``). Below every model: it imports no torch."""
