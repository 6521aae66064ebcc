"""Lightning's ``Trainer`` watched: ``Trainer(callbacks=[LightningWatchCallback(report="calls.json")])``."""

from __future__ import annotations

import os

from lightning.pytorch.callbacks import Callback

from ...watch.from_python.watching import Watch
from .step_metrics import step_metrics


class LightningWatchCallback(Callback):
    """Watches ``trainer.fit()`` from its start to its end (or its exception); every ``log_every_n_steps`` optimizer
    steps the numbers of :func:`step_metrics` go to each of the trainer's loggers (TensorBoard, CSV, W&B); at the end
    ``report`` (a path) gets ``watch --report``'s JSON, from global rank 0. ``report_of_run``: the run's report."""

    def __init__(self, report: str | os.PathLike[str] | None = None, publish: str | None = None) -> None:
        self.report_path = report
        self.publish = publish
        self.watch: Watch | None = None
        self.report_of_run = None

    def on_fit_start(self, trainer, pl_module) -> None:  # noqa: ANN001 - Lightning's signature
        self.watch = Watch(self.publish, name="Lightning Trainer.fit()")
        self.watch.__enter__()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:  # noqa: ANN001
        step = trainer.global_step
        if self.watch is None or not trainer.loggers or step % max(1, trainer.log_every_n_steps):
            return
        metrics = step_metrics(self.watch.report.watch_report)
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=step)

    def on_fit_end(self, trainer, pl_module) -> None:  # noqa: ANN001
        self._end(trainer, None)

    def on_exception(self, trainer, pl_module, exception: BaseException) -> None:  # noqa: ANN001
        self._end(trainer, exception)

    def _end(self, trainer, exception: BaseException | None) -> None:  # noqa: ANN001
        if self.watch is None:
            return
        watch, self.watch = self.watch, None
        watch.__exit__(type(exception) if exception else None, exception, exception.__traceback__ if exception else None)
        self.report_of_run = watch.report
        if self.report_path is not None and trainer.is_global_zero:
            self.report_of_run.to_json(self.report_path)
