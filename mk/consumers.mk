# consumers (issue 17): the JSON-lines stream of stat/attach --json -I and the --listen
# OpenMetrics endpoint (docs/consumers.md). test/consumers_prometheus_test.go scrapes
# `bayesperf attach --listen` with Debian's real Prometheus server and queries its HTTP
# API, so `make deps` installs it (the test skips, saying so, without the binary).

APT_PKGS += prometheus
