"""Knowledge distillation: a fine-tuned teacher compressed into a small student.

- :mod:`.runner` — the job: ``distill(DistillConfig, name, on_event=..., cancel=...)``;
- :mod:`.config` — ``DistillConfig`` and ``StudentConfig`` (saved in the manifest);
- :mod:`.students`, :mod:`.recurrent`, :mod:`.crf` — building students;
- :mod:`.methods`, :mod:`.schedules`, :mod:`.losses`, :mod:`.objective` — what is optimised;
- :mod:`.capture`, :mod:`.teacher_cache` — what the losses read from the models;
- :mod:`.data`, :mod:`.alignment` — batches for teacher and student, subword checks.
"""
