"""Training: fine-tuning with mlx-lm, the adapter registry and what describes an adapter (the
`lora_adapter` stage)."""
