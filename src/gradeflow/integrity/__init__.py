"""What keeps a verdict honest against the code it grades, in one room.

* :mod:`~gradeflow.integrity.sealing`: a fresh tree's test folders, test configuration and code loaders
  reset to the base's before every run, whatever the patch did to them.
* :mod:`~gradeflow.integrity.harness` and :mod:`~gradeflow.integrity.pytest_harness`: gradeflow's own part of
  every pytest run (a plugin loaded from outside the repository, canary tests, a record and a call log), and
  :func:`~gradeflow.integrity.harness.check_run`, every way a run disagrees with them and with the base.
  The plugin also installs the runtime audit hook (PEP 578) and watches pytest's machinery and the test
  modules' names; ``pytest_harness``'s docstring maps each of its checks to the attacks it catches.
* :mod:`~gradeflow.integrity.plugin_files`: the plugin compiled once per grader process, handed to each run
  as a loader module with its config, the code object and the source.
* :mod:`~gradeflow.integrity.boot`: how the harness joins pytest whatever the command does to its environment.
* :mod:`~gradeflow.integrity.tamper_scan` (with ``tamper_ast`` and ``tamper_rules``): the patch's added code
  that reaches into the test machinery, read from its files.
* :mod:`~gradeflow.integrity.bounded` and :mod:`~gradeflow.integrity.files`: the grader's own work over
  candidate files is bounded (parsers' failures are the candidate's, steps have time budgets) and never
  follows a link out of the tree.

The Prefect tasks that use these (``tasks/tests.py``, ``tasks/tamper_scan.py`` …) stay the graph's steps.
"""
