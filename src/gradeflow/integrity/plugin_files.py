"""The harness plugin's files for one run: a small loader module, the plugin's code compiled once per grader
process, and its source.

Compiling the plugin's 2,500 lines cost each test run about 20 ms of CPU (a tenth of the harness's whole
cost at 1,000 tests). So the grader compiles the template once, with its run's config left out, and writes
the code object (``marshal``, after this interpreter's magic number) beside a loader under the run's module
name. In the sandbox the loader takes that code when its own interpreter's magic number is the same (its
file names set to the loader's path, so the plugin's frames are told as its own); otherwise (another Python,
a docker image's) it compiles the source written beside it. Either way the config is the loader's own
literal, handed to the plugin as ``_gradeflow_config``, which the plugin deletes with the rest of its
module globals. The files sit in the sandbox's harness folder, which the test user cannot write (isolated,
docker), and the loader runs before any code of the repository is imported.
"""

from __future__ import annotations

import importlib.util
import json
import marshal
from collections.abc import Mapping
from functools import cache
from importlib import resources

__all__ = ["plugin_files", "plugin_template"]

_LOADER = '''"""gradeflow's pytest harness (loader). PYTEST_DONT_REWRITE: see gradeflow.integrity.plugin_files."""


def _gradeflow_code():
    import sys

    base = __file__[: -len(".py")]
    magic = getattr(sys.modules.get("_frozen_importlib_external"), "MAGIC_NUMBER", None)
    try:
        with open(base + ".code", "rb") as handle:
            data = handle.read()
    except OSError:
        data = b""
    if magic and data[: len(magic)] == magic:
        import marshal

        def placed(code):
            consts = tuple(placed(c) if type(c) is type(code) else c for c in code.co_consts)
            return code.replace(co_filename=__file__, co_consts=consts)

        return placed(marshal.loads(data[len(magic) :]))
    with open(base + ".source", encoding="utf-8") as handle:
        return compile(handle.read(), __file__, "exec", dont_inherit=True)


_gradeflow_config = __CONFIG__
exec(_gradeflow_code(), globals())
'''


@cache
def plugin_template() -> str:
    """The plugin's source (``plugin.py.txt``)."""
    return resources.files("gradeflow.integrity").joinpath("plugin.py.txt").read_text()


@cache
def _compiled(template: str) -> bytes:
    code = compile(template, "<gradeflow harness>", "exec", dont_inherit=True)
    return importlib.util.MAGIC_NUMBER + marshal.dumps(code)


def plugin_files(module: str, config: Mapping[str, object], template: str | None = None) -> dict[str, bytes]:
    """File name → bytes for a harness folder: ``module``'s loader (``<module>.py``) with ``config`` as its
    literal, the compiled plugin (``<module>.code``) and its source (``<module>.source``); ``template`` replaces
    the shipped plugin (benchmarks of an older one)."""
    source = plugin_template() if template is None else template
    loader = _LOADER.replace("__CONFIG__", repr(json.dumps(dict(config))))
    return {
        f"{module}.py": loader.encode(),
        f"{module}.code": _compiled(source),
        f"{module}.source": source.encode(),
    }
