"""What the loader module (:mod:`gradeflow.integrity.plugin_files`) binds before the harness runs in its namespace,
for ruff and mypy only: the assembler drops every relative import of the parts, this one's too."""

_gradeflow_config = "{}"  # the run's config, JSON: the loader's own literal
