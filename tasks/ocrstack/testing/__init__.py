"""Test helpers shipped in the package (tiny checkpoints for CPU end-to-end tests)."""
