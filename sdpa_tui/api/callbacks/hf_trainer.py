"""transformers' ``Trainer`` watched: ``TrainerWatchCallback(report="calls.json").add_to(trainer)``."""

from __future__ import annotations

import os

from transformers import TrainerCallback

from ...watch.from_python.watching import Watch
from .step_metrics import step_metrics


class TrainerWatchCallback(TrainerCallback):
    """Watches ``trainer.train()`` from its first step to its end; at each logging step the numbers of
    :func:`step_metrics` join the step's logs (what TensorBoard, W&B, the CSV and the printed logs get); at the end
    ``report`` (a path) gets ``watch --report``'s JSON, from the main process. ``report_of_run``: the run's report.

    Add it with :meth:`add_to`: first among the trainer's callbacks, so the reporting integrations log what it adds
    to the step's logs. Given in ``Trainer(callbacks=[...])`` it comes after them, and its numbers reach only the
    callbacks after it (the printed logs)."""

    def __init__(self, report: str | os.PathLike[str] | None = None, publish: str | None = None) -> None:
        self.report_path = report
        self.publish = publish
        self.watch: Watch | None = None
        self.report_of_run = None

    def add_to(self, trainer) -> TrainerWatchCallback:  # noqa: ANN001 - a transformers Trainer
        trainer.callback_handler.callbacks.insert(0, self)
        return self

    def on_train_begin(self, args, state, control, **kwargs):  # noqa: ANN001 - transformers' signature
        self.watch = Watch(self.publish, name="transformers Trainer.train()")
        self.watch.__enter__()

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
        if self.watch is not None and logs is not None:
            logs.update(step_metrics(self.watch.report.watch_report))

    def on_train_end(self, args, state, control, **kwargs):  # noqa: ANN001
        if self.watch is None:
            return
        watch, self.watch = self.watch, None
        watch.__exit__(None, None, None)
        self.report_of_run = watch.report
        if self.report_path is not None and state.is_world_process_zero:
            self.report_of_run.to_json(self.report_path)
