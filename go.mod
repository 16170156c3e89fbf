module github.com/bayesperf/bayesperf

go 1.26.0

require (
	github.com/cilium/ebpf v0.22.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
