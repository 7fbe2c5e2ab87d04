"""Deployments: the one registry of schedules and work pools, `chronicle serve`, `prefect.yaml`, `chronicle setup`."""
