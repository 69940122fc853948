"""The public API: what the package exports, and the documented entry points."""

import gradeflow
import gradeflow.graders
import gradeflow.sandbox


def test_package_exports() -> None:
    assert gradeflow.__all__ == sorted(gradeflow.__all__)
    assert {"grade", "load_task", "GradeResult", "GradeComponent", "TaskSpec"} <= set(gradeflow.__all__)
    for name in gradeflow.__all__:
        assert getattr(gradeflow, name) is not None


def test_graders_and_sandbox_exports() -> None:
    assert {"Grader", "CompositeGrader", "ConstraintGrader", "TestGrader", "QualityGrader", "PerfGrader"} <= set(
        gradeflow.graders.__all__
    )
    assert {"Sandbox", "SandboxFactory", "LocalSandboxFactory", "FakeSandboxFactory"} <= set(gradeflow.sandbox.__all__)
    for module in (gradeflow.graders, gradeflow.sandbox):
        assert all(getattr(module, name) for name in module.__all__)
