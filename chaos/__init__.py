"""The chaos soak: faults on a seeded schedule against a running platform, a workload, and
an auditor of what the platform did through them."""
