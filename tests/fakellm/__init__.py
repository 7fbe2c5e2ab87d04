"""Local OpenAI-compatible test server."""

from tests.fakellm.replies import Reply, default_responder
from tests.fakellm.server import FakeLLMServer, RecordedRequest

__all__ = ["FakeLLMServer", "RecordedRequest", "Reply", "default_responder"]
