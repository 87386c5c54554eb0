"""Prometheus metrics, one mechanism for every process: counters and histograms counted
where things happen (`counters`, `grpc`), gauges read from the process's own tables and
the broker by a supervised sampler (`sampling`, `probes`), served on `/metrics`
(`endpoint`). Names and units follow Prometheus's conventions; no metric has a `service`
label, since the scrape job names the process."""
