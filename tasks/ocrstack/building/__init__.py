"""Build vLLM from source (guide 3.2) or install the prebuilt upstream wheels.

Plan first, then run:

- :mod:`ocrstack.building.plan` computes an ordered list of :class:`~ocrstack.building.steps.Step`
  (argv, environment, done-check) with no side effects; ``--dry-run`` prints it.
  :mod:`ocrstack.building.steps` holds the plan data model and the steps every plan shares.
- :mod:`ocrstack.building.runner` executes it: one log file per step, skips steps whose
  done-check already holds, runs the doctor on a failed step's log.
- :mod:`ocrstack.building.resources` (MAX_JOBS, ccache), :mod:`ocrstack.building.offline`
  (``--deps`` variables, GitHub preflight), :mod:`ocrstack.building.sources` (pinned commits,
  patches), :mod:`ocrstack.building.harmless` (known-harmless warnings).
"""
