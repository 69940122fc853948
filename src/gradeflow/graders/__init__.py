"""Pure scoring: typed evidence in, one :class:`~gradeflow.models.GradeComponent` out."""

from gradeflow.graders.base import Grader, GradingContext, InMemoryWorkspace, WorkspaceView
from gradeflow.graders.composite import CompositeGrader, combine
from gradeflow.graders.constraints import ConstraintGrader
from gradeflow.graders.perf import PerfGrader, perf_score
from gradeflow.graders.quality import QualityGrader, measure_source, measure_units
from gradeflow.graders.reviewability import ReviewabilityGrader
from gradeflow.graders.test_evidence import TestEvidenceGrader
from gradeflow.graders.tests import TestGrader
from gradeflow.models.evidence import PatchTestsEvidence

__all__ = [
    "CompositeGrader",
    "ConstraintGrader",
    "Grader",
    "GradingContext",
    "InMemoryWorkspace",
    "PatchTestsEvidence",
    "PerfGrader",
    "QualityGrader",
    "ReviewabilityGrader",
    "TestEvidenceGrader",
    "TestGrader",
    "WorkspaceView",
    "combine",
    "measure_source",
    "measure_units",
    "perf_score",
]
