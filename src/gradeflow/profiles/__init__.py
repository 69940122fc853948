"""Grading policies shipped as YAML data; see :mod:`gradeflow.policy`."""
