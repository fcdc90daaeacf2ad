"""The page stages are declared once (:data:`ocrstack.parsing.stages.STAGES`), each with its name and side."""

from __future__ import annotations

from ocrstack.parsing.stages import STAGES, Stage


def test_each_stage_has_its_own_timing_key() -> None:
    names = [s.name for s in STAGES]
    assert len(set(names)) == len(names) == len(STAGES)
    assert all(isinstance(s, Stage) for s in STAGES)


def test_recognition_stages_are_the_tail_of_the_list() -> None:
    """Scale-out cuts the list by ``recognition``: the flag must not switch back to False."""
    flags = [s.recognition for s in STAGES]
    first = flags.index(True)
    assert not any(flags[:first]) and all(flags[first:])
    assert STAGES[first].name == "recognise"
