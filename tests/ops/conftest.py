"""The deployments suite's fixtures (session API URL, child-process environment) for the operator tests."""


from tests.deployments.conftest import api_url, proc_env  # noqa: F401 - pytest finds fixtures by name

