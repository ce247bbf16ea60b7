"""Data shipped with FastBioNER Studio (import name ``fastbioner_assets``): the
default model (``default-model/``) and the sample abstracts (``samples/``). Found
with :func:`importlib.resources.files`, so a wheel install finds them from any
folder, as a checkout does."""
