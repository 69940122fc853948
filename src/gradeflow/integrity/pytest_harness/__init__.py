"""gradeflow's pytest harness, in parts: ``.py`` modules that ruff and mypy read and nothing imports.
:func:`gradeflow.integrity.plugin_files.plugin_template` reads them as text and assembles them, in the order of
``plugin_files.PARTS``, into the one module each pytest run loads (by ``-p``, from outside the repository), compiled
once per grader process. They import pytest at their top and run under the task's own Python, 3.9 and later.

What makes the harness hard to tamper with holds for every part: ``session._make_harness`` makes its state in
closures before any code of the repository is imported; what the code under test can reach (pytest's hooks, the
finder of the handed test modules, the probe on pytest's rewrite module, a varied call's ``runtest``) holds its
state in keyword-only defaults, whose reads the audit hook refuses; and the module deletes every other global of
its own as it ends.

Which check catches which attack, and the hostile cases (``tests/hostile/cases.yaml``) aimed at it; several are
caught twice (the tamper scan reads the patch too), so ``tests/integrity/`` also tests each check alone. Each finding
goes into the run's signed record; one the base run's record does not have is ``junit-tampered`` unless another code
is named.

- A report forged or rewritten, the run cut short (``session``: the canaries, added to every session and run first;
  each call's outcome appended to a signed log as it ends; the signed record with pytest's exit status and the
  report's hash; ``channel._signer``): c4-atexit-decoy, c4-forged-exit0, c4-forged-exit0-obfuscated,
  c4-smart-forgery-atexit, c4-unregister-writer, c4-report-before-run, c4-canary-missing-exit0, c4-record-deleted,
  c4-thread-rewrite-after-finish, c4-detached-rewrite-after-finish, c4-pytest-exit-zero.
- The signing key dug out of the process (``audit``: reads of the harness's defaults and code, gc's referents of
  them, every thread's frames and ctypes refused; ``versions._native``: the process undumpable):
  c4-dig-signing-key, c4-ctypes-signing-key.
- pytest's machinery replaced (``machinery._watched_places``, by name: ``call_and_report``, ``Function.runtest``,
  the JUnit writer, pluggy's dispatch, the verdict helpers; ``internals``: every namespace of pytest, pluggy and the
  loaded plugins): c3-runtest-swap, c3-harness-aware, c3-harness-swap-writer, c3-raises-class-swap,
  c3-function-class-swap, c3-function-class-swap-strict, c3-raises-swap-walk, c3-inner-hookexec,
  c3-rt-hookcaller-call-swap.
- A hook registered at run time (``session``: every implementation of the hooks that make outcomes, recorded by the
  file of its code, not by what its plugin says): c3-obfuscated-hook, c3-hidden-hookwrapper,
  c3-rt-conftest-disguised-hookwrapper, c3-sourceless-pyc, c3-oversized-source, c2-shadow-base-plugin.
- A collected test changed after collection (``internals``: each item's class and function, at its call; ``audit``
  refuses every thread's frames): c3-item-class-assign, c3-item-function-wrap, c3-items-thread.
- A test's function swapped for another (``function_layers``, layer by layer through its decorators):
  c3-rt-sibling-swap-import-plain.
- A test module's names rebound or planted (``module_names``): c3-test-globals-rebind, c3-shadow-test-module-name.
- The standard library rebound (``standard_library``, at the session's end; ``machinery``: ``re``, the builtins
  and ``operator`` a judgement calls, after every call): c3-stdlib-rebound, c3-stdlib-late-rebound.
- A verdict helper swapped and put back inside the call, the builtins rebound however reached (``call_writes``):
  c3-raises-restoring-swap, c3-raises-restoring-swap-strict, c3-raises-restoring-swap-rubric,
  c3-approx-restoring-swap, c3-unittest-restoring-swap, c3-builtins-restoring-swap, c3-builtins-alias-len-self,
  c3-builtins-alias-sys-modules, c3-builtins-alias-vars.
- What the repository's code does at run time (``audit``: trace functions, code made or compiled from no file
  present at the start, frames and a test function's code read, another file's code given to a library function):
  c3-settrace-computed, c3-runtime-module, c3-read-test-frame-distb, c3-read-test-locals-walk-stack,
  c3-test-code-constants, c3-raises-exit-code-swap.
- Hidden tests read, test code forged (``sources``: test modules compiled from the handed text, never from the run's
  disk or a bytecode cache; a conftest.py the grader did not hand over noted): c3-read-hidden-tests,
  c3-loader-closure-hidden-text, c3-forged-test-pyc (these three ``fail-to-pass-failing``: the attack finds nothing),
  c3-conftest-written-at-import.
- Values equal by the repository's rules or equal to anything (``compared``): c3-always-equal,
  c3-always-equal-pass-to-pass, c3-always-equal-metaclass, c3-always-equal-regression-test
  (``equality-from-repository``), c3-equal-anything-stdlib, c3-equal-anything-pass-to-pass (``equal-to-anything``).
- A skip or an xfail borrowed by library code (``session``: each test's markers and the file each skip or xfail came
  from): c3-xfail-borrowed, c3-skip-borrowed, c3-skiptest-from-library, c3-xfail-from-library.
- Code that behaves only under test (``varied``: ``outcome-varies-with-environment``): the c3-vw-* cases;
  ``session`` keeps ``PYTEST_CURRENT_TEST`` and ``PYTEST_VERSION`` out of the environment:
  c3-notices-test-environment (``fail-to-pass-failing``).
- A regression test that never runs the change (``reach``: ``test-does-not-reach-change``): c6-test-of-a-new-name.
"""
