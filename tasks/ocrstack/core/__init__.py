"""Shared building blocks every verb uses: errors, paths, results, subprocesses."""
