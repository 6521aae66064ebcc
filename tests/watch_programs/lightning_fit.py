"""A tiny Lightning run: a causal self-attention block (F.scaled_dot_product_attention) fitted for a few steps on
random data, its metrics to a CSV logger. Prints the losses and a checksum of the final weights (a line starting ``losses``).

    lightning_fit.py [--callback REPORT.json] [--device cpu|cuda] [--steps N]

``--callback``: watched by ``LightningWatchCallback`` (its JSON written to REPORT.json); a line ``logged`` then
names, as JSON, the ``sdpa/...`` columns the CSV logger wrote."""

import argparse
import csv
import glob
import json
import logging
import os
import tempfile

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from lightning.pytorch.loggers import CSVLogger

parser = argparse.ArgumentParser()
parser.add_argument("--callback", metavar="REPORT")
parser.add_argument("--device", default="cpu")
parser.add_argument("--steps", type=int, default=4)
args = parser.parse_args()
logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)


class Attention(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(32, 96)
        self.out = torch.nn.Linear(32, 32)
        self.losses: list[float] = []

    def forward(self, x):
        q, k, v = self.qkv(x).view(x.shape[0], x.shape[1], 3, 4, 8).permute(2, 0, 3, 1, 4)
        return self.out(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).flatten(2))

    def training_step(self, batch, batch_idx):
        loss = (self(batch) - batch).pow(2).mean()
        self.losses.append(loss.item())
        self.log("loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


pl.seed_everything(0, verbose=False)
model = Attention()
data = torch.utils.data.DataLoader(torch.randn(32, 16, 32), batch_size=4)
with tempfile.TemporaryDirectory() as out:
    callbacks = []
    if args.callback:
        from sdpa_tui.api.callbacks import LightningWatchCallback

        callbacks.append(LightningWatchCallback(report=args.callback))
    trainer = pl.Trainer(max_steps=args.steps, accelerator=args.device, devices=1, logger=CSVLogger(out),
                         log_every_n_steps=2, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, callbacks=callbacks)
    trainer.fit(model, data)
    columns = []
    for path in glob.glob(os.path.join(out, "**", "metrics.csv"), recursive=True):
        with open(path) as f:
            columns += [c for c in next(csv.reader(f)) if c.startswith("sdpa/")]
print("losses", " ".join(repr(x) for x in model.losses), repr(sum(p.double().sum().item() for p in model.parameters())))
if args.callback:
    print("logged", json.dumps(sorted(columns)))
