package perf

import "github.com/bayesperf/bayesperf/perfabi"

// Event types (perf_event_attr.type) the kernel defines statically; dynamic PMUs publish
// theirs in /sys/bus/event_source/devices/PMU/type.
const (
	TypeHardware   uint32 = 0 // PERF_TYPE_HARDWARE: generic CPU events, config = HW* below
	TypeSoftware   uint32 = 1 // PERF_TYPE_SOFTWARE: kernel-counted events, config = SW*
	TypeTracepoint uint32 = 2 // PERF_TYPE_TRACEPOINT: config = tracefs event id
	TypeHWCache    uint32 = 3 // PERF_TYPE_HW_CACHE: config = cache | op<<8 | result<<16
	TypeRaw        uint32 = 4 // PERF_TYPE_RAW: config is the PMU's raw encoding
	TypeBreakpoint uint32 = 5 // PERF_TYPE_BREAKPOINT
)

// Generic hardware events (config of TypeHardware).
const (
	HWCPUCycles             uint64 = 0
	HWInstructions          uint64 = 1
	HWCacheReferences       uint64 = 2
	HWCacheMisses           uint64 = 3
	HWBranchInstructions    uint64 = 4
	HWBranchMisses          uint64 = 5
	HWBusCycles             uint64 = 6
	HWStalledCyclesFrontend uint64 = 7
	HWStalledCyclesBackend  uint64 = 8
	HWRefCPUCycles          uint64 = 9
)

// Software events (config of TypeSoftware).
const (
	SWCPUClock        uint64 = 0
	SWTaskClock       uint64 = 1
	SWPageFaults      uint64 = 2
	SWContextSwitches uint64 = 3
	SWCPUMigrations   uint64 = 4
	SWPageFaultsMin   uint64 = 5
	SWPageFaultsMaj   uint64 = 6
	SWAlignmentFaults uint64 = 7
	SWEmulationFaults uint64 = 8
	SWDummy           uint64 = 9
	SWBPFOutput       uint64 = 10
	SWCgroupSwitches  uint64 = 11
)

// Attr is struct perf_event_attr. Its layout, flag and read_format bits and its decoder
// are in package perfabi, shared with the shim and the ring reader.
type Attr = perfabi.Attr
