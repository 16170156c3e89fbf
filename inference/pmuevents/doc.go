// Package pmuevents loads Linux's pmu-events JSON (tools/perf/pmu-events/arch: vendor
// event lists, metric formulas, counter.json and mapfile.csv) and turns it into what
// BayesPerf needs: relations between raw events and counter constraints.
//
// A Table is one CPU's directory (x86/skylake, arm64/arm/neoverse-n1, ...). From it,
// Relations derives, each with its Source and a Note saying why it holds:
//
//   - aliases: two names with the same encoding count the same thing (exact);
//   - sub-events: an event whose unit mask is a proper subset of another's (same event
//     code and modifiers, no inversion or edge detection) counts a subset of it (child
//     <= parent); when the children's masks combine into the parent's as disjoint parts
//     within one field of the mask (L2_RQSTS.MISS = the four request types' misses) the
//     parent is their sum, an identity with a small tolerance because the JSON does not
//     state that no event falls in two children. Families whose masks are enumerations
//     (AMD FpOpsRetiredByType) and cycle counts with a threshold get no sums;
//   - misses <= accesses where the names make it certain (BR_MISP_RETIRED.X <=
//     BR_INST_RETIRED.X, Arm's X_REFILL <= X), fixed-counter twins (INST_RETIRED.ANY =
//     INST_RETIRED.ANY_P);
//   - on Arm cores, perf's generic events against the architectural events the kernel
//     opens for them (instructions = inst_retired, exact; CoreNames names a core
//     event by its number, so that the events a tool opens by number can be named);
//   - metric trees: a top-down metric against the sum of its child metrics (Intel's
//     tma_X_group, TopdownL1 sums to 100%), with every metric reference inlined down to
//     raw events. Relations that hold for any event values (the vendor defined one side
//     as the other minus its siblings) carry no information and are dropped.
//
// Event names in relations are lower case, as `perf list` prints them; Canonical maps a
// user's spelling onto them. Counter constraints come from each event's Counter field
// ("0,1,2,3", "Fixed counter 1") and counter.json (fixed and generic counters per unit).
// Host finds the host's directory through /proc/cpuinfo (or the MIDR on arm64) and
// mapfile.csv; Open takes an arch root (then the host's table) or a CPU directory; HostEnv reads the #literals formulas use (#SMT_on, #slots, ...) from
// sysfs.
//
// Loading reads files and returns errors naming the file; nothing panics on malformed
// JSON or formulas (a metric whose formula does not parse is reported, not fatal: see
// Table.Problems). A loaded Table is read-only and safe for concurrent use.
package pmuevents
