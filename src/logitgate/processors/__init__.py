"""Logits processors (bias, penalties, tree decode, thinking budget, finished rows), sampling and the pipeline."""
