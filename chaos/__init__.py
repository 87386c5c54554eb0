"""The chaos soak: a workload of customers, faults injected into every part, and an audit of
what the stores hold afterwards against the platform's promises."""
