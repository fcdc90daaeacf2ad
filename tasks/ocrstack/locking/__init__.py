"""``ocrstack lock``: uv.lock exports and pixi lock checks."""
