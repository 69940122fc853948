"""gradeflow as a standing service on a self-hosted Prefect server.

- :mod:`gradeflow.service.params`: the pydantic parameters of the deployments (the UI shows a form).
- :mod:`gradeflow.service.flows`: the flows the deployments run (``grade-request``, ``evaluate-request``).
- :mod:`gradeflow.service.deployments`: ``gradeflow serve`` and ``gradeflow deploy --pool NAME``.
- :mod:`gradeflow.service.webhook`: the signed-webhook receiver (``gradeflow webhook``).
- :mod:`gradeflow.service.config`: the service config file (schedule, suite, GitHub repo → task mapping).
"""

from gradeflow.service.config import ServiceConfig, load_service_config
from gradeflow.service.params import EvaluateRequest, GradeRequest

__all__ = ["EvaluateRequest", "GradeRequest", "ServiceConfig", "load_service_config"]
