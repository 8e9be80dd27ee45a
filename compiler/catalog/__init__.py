"""Built-in catalogues: GPUs and model presets, each figure with its source."""
