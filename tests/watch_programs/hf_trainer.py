"""A tiny transformers Trainer run: a Llama from a config (random weights, no download), a few steps on random
tokens. Prints the logged losses and a checksum of the final weights (a line starting ``losses``).

    hf_trainer.py [--callback REPORT.json] [--device cpu|cuda] [--steps N] [--bf16]

``--callback``: watched by ``TrainerWatchCallback`` (its JSON written to REPORT.json); a line ``logged`` then says, as
JSON, which ``sdpa/...`` keys a callback after it (as a reporting integration would be) saw at each logging step."""

import argparse
import json
import tempfile

import torch
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainerCallback, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--callback", metavar="REPORT")
parser.add_argument("--device", default="cpu")
parser.add_argument("--steps", type=int, default=4)
parser.add_argument("--bf16", action="store_true", help="mixed precision (autocast to bfloat16, a GPU's)")
args = parser.parse_args()

torch.manual_seed(0)
model = LlamaForCausalLM(LlamaConfig(
    vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8,
    num_key_value_heads=2, max_position_embeddings=64, attn_implementation="sdpa",
))
ids = torch.randint(0, 128, (16, 16))
data = [{"input_ids": row, "labels": row} for row in ids]


class LogsSeen(TrainerCallback):
    """What an integration after the watch's callback gets at each logging step."""

    def __init__(self) -> None:
        self.keys: list[list[str]] = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.keys.append(sorted(k for k in logs or {} if k.startswith("sdpa/")))


with tempfile.TemporaryDirectory() as out:
    training = TrainingArguments(
        output_dir=out, max_steps=args.steps, per_device_train_batch_size=4, logging_steps=2, report_to="none",
        save_strategy="no", disable_tqdm=True, seed=0, use_cpu=args.device == "cpu", learning_rate=1e-3,
        dataloader_num_workers=0, bf16=args.bf16,
    )
    trainer = Trainer(model=model, args=training, train_dataset=data)
    seen = LogsSeen()
    if args.callback:
        from sdpa_tui.api.callbacks import TrainerWatchCallback

        TrainerWatchCallback(report=args.callback).add_to(trainer)
        trainer.add_callback(seen)
    trainer.train()
losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
print("losses", " ".join(repr(x) for x in losses), repr(sum(p.double().sum().item() for p in model.parameters())))
if args.callback:
    print("logged", json.dumps(seen.keys))
