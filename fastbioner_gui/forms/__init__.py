"""The app's forms as plain Python, no Qt (an import-linter contract holds that): what a
dialog's settings are, which of them are remembered from one opening to the next, how
they follow one another (a recipe sets every field it names; a field edited by hand
leaves the recipe), and the config they make. A dialog binds its widgets to a form
(:mod:`fastbioner_gui.dialogs.form_binding`) and holds no rule of its own, so the rules
are tested without a window.

:mod:`.fields` declares settings once (:class:`Setting`, as Orange's ``Setting()``) and
gives every form the same remembering and restoring; :mod:`.training` and
:mod:`.distill` are the training dialogs' forms."""

from .fields import Form, Setting

__all__ = ["Form", "Setting"]
