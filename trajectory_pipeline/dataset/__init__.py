"""The dataset: decision points rendered as training records, filtered, split, and written as an
mlx-lm data directory (the `rendered_splits` stage)."""
