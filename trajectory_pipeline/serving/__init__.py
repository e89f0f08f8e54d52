"""From a promoted adapter to a model people run: fused, exported and served (`promoted_model`, `serve`)."""
