module github.com/bayesperf/bayesperf

go 1.26.0
