package pmuevents

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference/metricexpr"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/internal/testutil"
)

// archRoot is the pmu-events tree tests read (testutil.PMUEvents); a user's clone
// has none, and the tests skip saying how to get one.
func archRoot(t testing.TB) string {
	t.Helper()
	root, _ := testutil.PMUEvents(t)
	return root
}

// sharedDirs are the CPU directories of the shared copy.
var sharedDirs = []string{
	"x86/skylake", "x86/skylakex", "x86/icelake", "x86/sapphirerapids", "x86/alderlake",
	"x86/amdzen3", "x86/amdzen4", "arm64/arm/neoverse-n1", "powerpc/power9",
}

// hostEnv sets every #literal the vendor formulas use to a plausible host value.
var hostEnv = Env{Literals: map[string]float64{
	"#smt_on": 1, "#slots": 5, "#num_packages": 2, "#num_cores": 16, "#num_dies": 2,
	"#num_cpus_online": 32, "#system_tsc_freq": 2.1e9, "#core_wide": 1, "#has_pmem": 0,
}}

func load(t *testing.T, dir string) *Table {
	t.Helper()
	tb, err := Load(archRoot(t), dir)
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	return tb
}

func mustLoadUnit(t *testing.T, dir, unit string) *Table {
	t.Helper()
	tb, err := LoadUnit(archRoot(t), dir, unit)
	if err != nil {
		t.Fatalf("load %s %s: %v", dir, unit, err)
	}
	return tb
}

func TestLoadEveryTable(t *testing.T) {
	root, shared := testutil.PMUEvents(t)
	metrics := 0
	for _, dir := range sharedDirs {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			continue // a user's full tree: other directories are tested the same way below
		}
		tb := load(t, dir)
		if len(tb.Events) < 50 {
			t.Errorf("%s: only %d events", dir, len(tb.Events))
		}
		for _, p := range tb.Problems {
			if strings.Contains(p, "parse") {
				t.Errorf("%s: %s", dir, p)
			}
		}
		metrics += len(tb.Metrics)
		for _, p := range tb.Problems {
			if strings.Contains(p, "defined twice") {
				metrics++ // a formula that was read but not kept
			}
		}
		t.Logf("%-24s %4d events %4d metrics %d PMUs, %d problems", dir, len(tb.Events), len(tb.Metrics), len(tb.PMUs), len(tb.Problems))
	}
	if metrics == 0 {
		t.Fatal("no metrics loaded")
	}
	// Hybrid alderlake: the atom cores' table is the rest of the file.
	if _, err := os.Stat(filepath.Join(root, "x86/alderlake")); err == nil {
		core, atom := load(t, "x86/alderlake"), mustLoadUnit(t, "x86/alderlake", "cpu_atom")
		if len(core.Problems)+len(atom.Problems) != 0 {
			t.Errorf("alderlake problems: %v %v", core.Problems, atom.Problems)
		}
		c, _ := core.Event("baclears.any")
		a, _ := atom.Event("baclears.any")
		if c == nil || a == nil || c.Unit != "cpu_core" || a.Unit != "cpu_atom" {
			t.Errorf("alderlake baclears.any: core %+v atom %+v", c, a)
		}
		t.Logf("alderlake cpu_atom: %d events %d metrics", len(atom.Events), len(atom.Metrics))
		for _, m := range atom.Metrics {
			if _, shared := core.Metric(m.Name); !shared || !strings.Contains(m.File, "adl-metrics") {
				metrics++
			}
		}
		// Unit-less metrics appear in both loads; atom-only ones were counted above.
		for _, m := range atom.Metrics {
			if c, ok := core.Metric(m.Name); ok && c.Formula != m.Formula {
				metrics++ // same name, atom formula: a separate formula of the file
			}
		}
	}
	if shared {
		// Every MetricExpr of the shared tree is loaded once (1762, the count of
		// metricexpr.TestAllVendorFormulasParse): tables + sbsa.json + the atom half of
		// alderlake + amdzen4's two repeated entries.
		if metrics != 1762 {
			t.Errorf("%d metric formulas accounted for, want 1762", metrics)
		}
	}
}

// TestExpandAgreesWithDirectEvaluation expands every metric of every table down to raw
// events and checks, at random event values, that the expansion evaluates to what the
// formula gives when its metric references are evaluated recursively instead.
func TestExpandAgreesWithDirectEvaluation(t *testing.T) {
	root := archRoot(t)
	rng := rand.New(rand.NewPCG(7, 11))
	checked := 0
	for _, dir := range sharedDirs {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			continue
		}
		tb := load(t, dir)
		vals := map[string]float64{}
		val := func(e string) float64 {
			e = Canonical(e)
			v, ok := vals[e]
			if !ok {
				v = 1e3 + rng.Float64()*1e6
				vals[e] = v
			}
			return v
		}
		var direct func(m *Metric, depth int) (float64, error)
		env := func(depth int) metricexpr.Env {
			return metricexpr.Env{
				Value: func(n string) (float64, bool) {
					if m, ok := tb.Metric(n); ok && depth < 50 {
						v, err := direct(m, depth+1)
						return v, err == nil
					}
					return val(n), true
				},
				Literal: func(n string) (float64, bool) {
					v, ok := hostEnv.Literals[strings.ToLower(n)]
					return v, ok
				},
				HasEvent: func(n string) bool { _, ok := tb.Event(n); return ok },
			}
		}
		direct = func(m *Metric, depth int) (float64, error) { return metricexpr.Eval(m.Expr, env(depth)) }
		for _, m := range tb.Metrics {
			x, err := tb.Expand(m.Name, hostEnv)
			if err != nil {
				t.Errorf("%s: expand %s: %v", dir, m.Name, err)
				continue
			}
			relation.Walk(x, func(n relation.Expr) {
				if e, ok := n.(relation.Event); ok {
					if _, isMetric := tb.Metric(e.Name); isMetric {
						t.Errorf("%s: %s: metric %s left unexpanded", dir, m.Name, e.Name)
					}
				}
			})
			want, err := direct(m, 0)
			if err != nil {
				t.Errorf("%s: evaluate %s directly: %v", dir, m.Name, err)
				continue
			}
			got, err := relation.EvalExpr(x, val)
			if errors.Is(err, relation.ErrDivZero) && math.IsNaN(want) {
				continue // both sides divide by zero (perf's NaN)
			}
			if err != nil || !(math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) || math.IsNaN(want) && math.IsNaN(got)) {
				t.Errorf("%s: %s: expanded gives %v (%v), direct %v", dir, m.Name, got, err, want)
			}
			checked++
		}
	}
	t.Logf("%d metrics expanded and checked", checked)
	if _, err := load(t, "x86/skylake").Expand("tma_info_thread_slots", Env{}); !errors.Is(err, ErrUnknownLiteral) {
		t.Errorf("expanding a formula with #SMT_on and no literals: got %v, want ErrUnknownLiteral", err)
	}
}

func hasRelation(rels []relation.Relation, text string) bool {
	for _, r := range rels {
		if r.Text == text {
			return true
		}
	}
	return false
}

func TestSubEventRelations(t *testing.T) {
	skl := load(t, "x86/skylake")
	rels, _ := skl.Relations(hostEnv)
	for _, want := range []string{
		// Hit/miss and request-type splits of L2_RQSTS (0x3f = 0x21|0x22|0x24|0x38).
		"l2_rqsts.miss = ((l2_rqsts.demand_data_rd_miss + l2_rqsts.rfo_miss) + l2_rqsts.code_rd_miss) + l2_rqsts.pf_miss",
		"l2_rqsts.all_demand_data_rd = l2_rqsts.demand_data_rd_miss + l2_rqsts.demand_data_rd_hit",
		// Page-size split of completed walks (0xe = 0x2|0x4|0x8).
		"dtlb_load_misses.walk_completed = (dtlb_load_misses.walk_completed_4k + dtlb_load_misses.walk_completed_2m_4m) + dtlb_load_misses.walk_completed_1g",
		"l2_rqsts.demand_data_rd_miss <= l2_rqsts.all_demand_data_rd",
		"br_misp_retired.conditional <= br_inst_retired.conditional",
		"inst_retired.any = inst_retired.any_p",
		"icache_64b.iftag_stall = icache_tag.stalls",
	} {
		if !hasRelation(rels, want) {
			t.Errorf("skylake lacks %q", want)
		}
	}
	for _, bad := range []string{
		// Masks that OR to the parent but whose events overlap (both hold the demand
		// misses): not a sum.
		"l2_rqsts.references = l2_rqsts.miss + l2_rqsts.all_demand_references",
		"l2_rqsts.all_demand_references = l2_rqsts.all_demand_miss + l2_rqsts.all_demand_data_rd",
		// Cycle counts (CounterMask=1) of two filters can coincide: not a sum.
		"idq.all_dsb_cycles_any_uops = idq.dsb_cycles + idq.ms_dsb_cycles",
		// A read-modify-write instruction is both a load and a store.
		"mem_inst_retired.any = mem_inst_retired.all_loads + mem_inst_retired.all_stores",
	} {
		if hasRelation(rels, bad) {
			t.Errorf("skylake has the false relation %q", bad)
		}
	}
	// Every sub-event relation is consistent with the masks it claims.
	for _, r := range rels {
		if !strings.HasPrefix(r.Source, "subevents:") {
			continue
		}
		evs := r.Events()
		var parent *Event
		if e, ok := r.LHS.(relation.Event); ok && r.Op == relation.Eq {
			parent, _ = skl.Event(e.Name)
		}
		if e, ok := r.RHS.(relation.Event); ok && r.Op == relation.Le {
			parent, _ = skl.Event(e.Name)
		}
		if parent == nil {
			t.Errorf("%s: no parent event", r.Text)
			continue
		}
		var or uint64
		for _, n := range evs {
			c, _ := skl.Event(n)
			if c == parent {
				continue
			}
			if c.Code != parent.Code || c.Modifiers != parent.Modifiers || c.UMask&parent.UMask != c.UMask || c.UMask == parent.UMask {
				t.Errorf("%s: %s (%#x) is not a sub-event of %s (%#x)", r.Text, c.Name, c.UMask, parent.Name, parent.UMask)
			}
			or |= c.UMask
		}
		if r.Op == relation.Eq && or != parent.UMask {
			t.Errorf("%s: children OR to %#x, parent is %#x", r.Text, or, parent.UMask)
		}
	}

	spr := load(t, "x86/sapphirerapids")
	srels, _ := spr.Relations(hostEnv)
	// L2_REQUEST.ALL 0xff = hits 0xc1|0xc2|0xc4|0xc8 | ALL_HWPF 0xf0, but 0xf0 adds the
	// miss bit 0x20 to the hardware-prefetch type: the sum would lack the demand misses.
	if hasRelation(srels, "l2_request.all = (((l2_rqsts.demand_data_rd_hit + l2_rqsts.rfo_hit) + l2_rqsts.code_rd_hit) + l2_rqsts.swpf_hit) + l2_rqsts.all_hwpf") {
		t.Error("sapphirerapids has the false L2_REQUEST.ALL sum")
	}
	if !hasRelation(srels, "l2_request.miss = (((l2_rqsts.demand_data_rd_miss + l2_rqsts.rfo_miss) + l2_rqsts.code_rd_miss) + l2_rqsts.swpf_miss) + l2_rqsts.hwpf_miss") {
		t.Error("sapphirerapids lacks the L2_REQUEST.MISS sum")
	}

	zen := load(t, "x86/amdzen4")
	zrels, _ := zen.Relations(hostEnv)
	// FpOpsRetiredByType numbers operation types: scalar_mul (3) is not add (1) + sub (2).
	for _, r := range zrels {
		if strings.Contains(r.Text, "fp_ops_retired_by_type.") && strings.HasPrefix(r.Source, "subevents:") {
			t.Errorf("enumerated unit mask treated as filter bits: %s", r.Text)
			break
		}
	}
	if !hasRelation(zrels, "ex_ret_brn_misp <= ex_ret_brn") {
		t.Error("zen4 lacks ex_ret_brn_misp <= ex_ret_brn")
	}
	n1 := load(t, "arm64/arm/neoverse-n1")
	nrels, _ := n1.Relations(hostEnv)
	for _, want := range []string{"l1d_cache_refill <= l1d_cache", "br_mis_pred_retired <= br_retired", "stall_frontend <= cpu_cycles"} {
		if !hasRelation(nrels, want) {
			t.Errorf("neoverse-n1 lacks %q", want)
		}
	}
}

// TestRelationsHoldOnConsistentCounts builds counts that satisfy the vendor semantics
// (leaf sub-events drawn at random, parents as the sum of their leaves) and checks that
// every linear identity of the sub-event kind holds on them. Catches relations whose
// sides were built from the wrong events.
func TestRelationsHoldOnConsistentCounts(t *testing.T) {
	skl := load(t, "x86/skylake")
	rels, _ := skl.Relations(hostEnv)
	rng := rand.New(rand.NewPCG(3, 5))
	// Leaves of L2_RQSTS: request type x hit/miss cells.
	leaf := map[uint64]float64{}
	for _, m := range []uint64{0x21, 0x22, 0x24, 0x38, 0xc1, 0xc2, 0xc4, 0xd8} {
		leaf[m] = float64(rng.IntN(1e6))
	}
	val := func(name string) float64 {
		e, ok := skl.Event(name)
		if !ok || e.Code != 0x24 {
			return math.NaN()
		}
		s := 0.0
		for m, v := range leaf {
			// A cell is in an event when both its type bits and its hit/miss bits are.
			if m&0x1f&e.UMask != 0 && m&0xe0&e.UMask != 0 && (m&0x1f)&^e.UMask == 0 && (m&0xe0)&^e.UMask == 0 {
				s += v
			}
		}
		return s
	}
	n := 0
	for _, r := range rels {
		if !strings.HasPrefix(r.Source, "subevents:l2_rqsts") {
			continue
		}
		ok, err := r.Holds(val, 0)
		if err != nil || !ok {
			l, rr, _ := r.Eval(val)
			t.Errorf("%s does not hold on consistent counts: %g vs %g (%v)", r.Text, l, rr, err)
		}
		n++
	}
	if n < 10 {
		t.Errorf("only %d L2_RQSTS relations checked", n)
	}
}

func TestMetricTree(t *testing.T) {
	skl := load(t, "x86/skylake")
	rels, skipped := skl.Relations(hostEnv)
	var tree []relation.Relation
	for _, r := range rels {
		if strings.HasPrefix(r.Source, "metric:") {
			tree = append(tree, r)
		}
	}
	if !hasRelation(tree, "tma_dram_bound = tma_mem_bandwidth + tma_mem_latency") {
		t.Errorf("no tma_dram_bound tree relation among %d", len(tree))
	}
	for _, r := range tree {
		for _, e := range r.Events() {
			if _, ok := skl.Metric(e); ok {
				t.Errorf("%s: metric %s not expanded", r.Text, e)
			}
		}
		if !informative(r) {
			t.Errorf("%s holds for any values but was kept", r.Text)
		}
	}
	// tma_fetch_bandwidth is defined as frontend_bound − fetch_latency: the frontend
	// tree says nothing about the events and must be dropped as a tautology.
	found := false
	for _, s := range skipped {
		if strings.HasPrefix(s, "metric tree tma_frontend_bound:") {
			found = true
		}
	}
	if !found || hasRelation(tree, "tma_frontend_bound = tma_fetch_bandwidth + tma_fetch_latency") {
		t.Errorf("the tautological frontend tree was not dropped: %v", skipped)
	}
	// Arm's TopdownL1 (sbsa.json) sums to 100% only when STALL_SLOT = FRONTEND + BACKEND
	// stalls: an informative relation.
	n1 := load(t, "arm64/arm/neoverse-n1")
	nrels, _ := n1.Relations(hostEnv)
	var l1 *relation.Relation
	for i := range nrels {
		if strings.HasPrefix(nrels[i].Source, "metric:TopdownL1") {
			l1 = &nrels[i]
		}
	}
	if l1 == nil {
		t.Fatal("neoverse-n1 has no TopdownL1 relation")
	}
	vals := map[string]float64{"cpu_cycles": 1e6, "stall_slot_frontend": 1e6, "stall_slot_backend": 2e6, "stall_slot": 3e6, "op_retired": 5e5, "op_spec": 7e5}
	if ok, err := l1.Holds(func(e string) float64 { return vals[e] }, 1e-9); !ok || err != nil {
		t.Errorf("%s fails on consistent counts: %v", l1.Text, err)
	}
	vals["stall_slot"] = 4e6
	if ok, _ := l1.Holds(func(e string) float64 { return vals[e] }, 0); ok {
		t.Errorf("%s holds on inconsistent counts", l1.Text)
	}
}

func TestConstraints(t *testing.T) {
	skl := load(t, "x86/skylake")
	if f, g, ok := skl.Counters("core"); !ok || f != 3 || g != 4 {
		t.Errorf("skylake core counters = %d fixed %d generic (%v), want 3 and 4", f, g, ok)
	}
	for name, want := range map[string]Constraint{
		"INST_RETIRED.ANY":             {Fixed: 0},
		"cpu_clk_unhalted.thread":      {Fixed: 1},
		"CPU_CLK_UNHALTED.REF_TSC":     {Fixed: 2},
		"inst_retired.prec_dist":       {Fixed: -1, Mask: 0b10},
		"inst_retired.total_cycles_ps": {Fixed: -1, Mask: 0b1101},
		"l1d.replacement":              {Fixed: -1, Mask: 0b1111},
	} {
		c, ok := skl.Constraint(name)
		if !ok || c.Fixed != want.Fixed || c.Mask != want.Mask || c.Generic != 4 {
			t.Errorf("constraint of %s = %+v (%v), want fixed %d mask %#b generic 4", name, c, ok, want.Fixed, want.Mask)
		}
	}
	if _, ok := skl.Constraint("no.such_event"); ok {
		t.Error("constraint for an unknown event")
	}
}

func TestFindDir(t *testing.T) {
	root := archRoot(t)
	for _, c := range []struct {
		cpu  CPU
		want string
	}{
		{CPU{"x86", "GenuineIntel-6-55-4"}, "x86/skylakex"}, // full-id pattern with stepping
		{CPU{"x86", "GenuineIntel-6-4E-3"}, "x86/skylake"},  // pattern without stepping
		{CPU{"x86", "GenuineIntel-6-7E-5"}, "x86/icelake"},  //
		{CPU{"x86", "AuthenticAMD-25-21-0"}, "x86/amdzen3"}, // [245][[:xdigit:]]
		{CPU{"x86", "AuthenticAMD-25-11-1"}, "x86/amdzen4"}, // not zen3: falls to [[:xdigit:]]+
		{CPU{"x86", "AuthenticAMD-26-2-1"}, "x86/amdzen5"},  // this VM's CPU (a table the shared copy lacks)
		{CPU{"arm64", "0x00000000410fd0c0"}, "arm64/arm/neoverse-n1"},
		{CPU{"arm64", "0x00000000413fd0c1"}, "arm64/arm/neoverse-n1"}, // variant and revision masked
		{CPU{"powerpc", "0x004e1202"}, "powerpc/power9"},
	} {
		got, err := FindDir(root, c.cpu)
		if err != nil || got != c.want {
			t.Errorf("FindDir(%v) = %q, %v; want %q", c.cpu, got, err, c.want)
		}
	}
	if _, err := FindDir(root, CPU{"x86", "GenuineIntel-6-FF-0"}); !errors.Is(err, ErrNoMatch) {
		t.Errorf("unknown CPU: got %v, want ErrNoMatch", err)
	}
}

func TestParseCPUInfo(t *testing.T) {
	x86 := "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\nmodel name\t: Xeon\nstepping\t: 4\n\nprocessor\t: 1\nvendor_id\t: Other\n"
	c, err := ParseCPUInfo("x86", strings.NewReader(x86))
	if err != nil || c.ID != "GenuineIntel-6-55-4" {
		t.Errorf("x86 cpuinfo: %+v, %v; want GenuineIntel-6-55-4 (model 85 = 0x55)", c, err)
	}
	ppc := "processor\t: 0\ncpu\t\t: POWER9 (raw), altivec supported\nrevision\t: 2.2 (pvr 004e 1202)\n"
	c, err = ParseCPUInfo("powerpc", strings.NewReader(ppc))
	if err != nil || c.ID != "0x004e1202" {
		t.Errorf("powerpc cpuinfo: %+v, %v", c, err)
	}
	if _, err := ParseCPUInfo("x86", strings.NewReader("garbage\n")); err == nil {
		t.Error("cpuinfo without fields accepted")
	}
}

// TestHost identifies this machine and loads its table when the tree has it. On the
// development VM (AMD family 26, "amdzen5") the shared copy lacks the directory, and
// the error must say which one.
func TestHost(t *testing.T) {
	root := archRoot(t)
	cpu, err := HostCPU()
	if err != nil {
		t.Fatalf("identify this CPU: %v", err)
	}
	dir, err := FindDir(root, cpu)
	if err != nil {
		t.Logf("no table for %v: %v", cpu, err)
		return
	}
	tb, err := Host(root)
	if _, statErr := os.Stat(filepath.Join(root, dir)); statErr != nil {
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("Host with %s missing: got %v, want an error naming it", dir, err)
		}
		t.Logf("host %v maps to %s, absent from this tree: %v", cpu, dir, err)
		return
	}
	if err != nil || tb.Dir != dir {
		t.Errorf("Host = %v, %v; want table %s", tb, err, dir)
	}
}

func TestBindVendorRelationsToARun(t *testing.T) {
	skl := load(t, "x86/skylake")
	rels, _ := skl.Relations(hostEnv)
	run := []string{"l2_rqsts.miss", "l2_rqsts.demand_data_rd_miss", "l2_rqsts.rfo_miss", "l2_rqsts.code_rd_miss", "l2_rqsts.pf_miss", "inst_retired.any"}
	bound := relation.Bind(rels, run)
	if !hasRelation(bound, "l2_rqsts.miss = ((l2_rqsts.demand_data_rd_miss + l2_rqsts.rfo_miss) + l2_rqsts.code_rd_miss) + l2_rqsts.pf_miss") {
		t.Errorf("the L2 miss sum did not bind: %d bound", len(bound))
	}
	for _, r := range bound {
		if r.Kind() == relation.Nonlinear && r.Op == relation.Eq && strings.HasPrefix(r.Source, "subevents") {
			t.Errorf("%s: a sub-event sum is not linear", r.Text)
		}
	}
}

// TestEveryMappedTable loads every table that a mapfile.csv of the tree names and that
// the tree has, derives its relations, and checks that each relation evaluates and
// that every sub-event and alias relation names events of the table. With the full
// Linux tree (make pmu-events) this covers every CPU perf knows.
func TestEveryMappedTable(t *testing.T) {
	root := archRoot(t)
	dirs := map[string]bool{}
	for _, arch := range []string{"x86", "arm64", "powerpc", "riscv", "s390", "nds32"} {
		b, err := os.ReadFile(filepath.Join(root, arch, "mapfile.csv"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			parts := strings.Split(strings.TrimSpace(line), ",")
			if len(parts) < 4 || strings.HasPrefix(parts[0], "#") || strings.TrimSpace(parts[3]) != "core" {
				continue
			}
			d := arch + "/" + strings.TrimSpace(parts[2])
			if st, err := os.Stat(filepath.Join(root, d)); err == nil && st.IsDir() {
				dirs[d] = true
			}
		}
	}
	if len(dirs) == 0 {
		t.Fatal("no mapped table found")
	}
	total := map[string]int{}
	for d := range dirs {
		tb := load(t, d)
		rels, _ := tb.Relations(hostEnv)
		for _, r := range rels {
			kind := strings.SplitN(r.Source, ":", 2)[0]
			kind = strings.SplitN(kind, "@", 2)[0]
			total[kind]++
			if kind == "metric" {
				continue
			}
			for _, e := range r.Events() {
				if kind == "generic" && e == r.LHS.String() {
					continue // perf's generic event, named by perf, not by the table
				}
				if _, ok := tb.Event(e); !ok {
					t.Errorf("%s: %s names %s, not an event of the table", d, r.Text, e)
				}
			}
			if _, _, err := r.Eval(func(string) float64 { return 1 }); err != nil {
				t.Errorf("%s: %s: %v", d, r.Text, err)
			}
		}
	}
	t.Logf("%d tables: relations by kind %v", len(dirs), total)
}

// BenchmarkLoadAndRelations measures loading a table and deriving its relations, per
// table size (events in the table).
func BenchmarkLoadAndRelations(b *testing.B) {
	root := archRoot(b)
	for _, dir := range []string{"x86/amdzen3", "x86/skylake", "x86/skylakex"} {
		if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
			continue
		}
		b.Run(strings.ReplaceAll(dir, "/", "_"), func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				tb, err := Load(root, dir)
				if err != nil {
					b.Fatal(err)
				}
				rels, _ := tb.Relations(hostEnv)
				n = len(rels)
			}
			b.ReportMetric(float64(n), "relations")
		})
	}
}

func TestCounterSpec(t *testing.T) {
	skl := load(t, "x86/skylake")
	fixed, allowed, generic := skl.CounterSpec([]string{"inst_retired.any", "L1D_PEND_MISS.PENDING", "inst_retired.prec_dist", "page-faults", "cpu_clk_unhalted.thread"})
	if generic != 4 || !reflect.DeepEqual(fixed, []int{0, 4}) {
		t.Errorf("fixed %v generic %d, want [0 4] and 4", fixed, generic)
	}
	if allowed[2] != 0b10 || allowed[1] != 0b1111 {
		t.Errorf("allowed %v: want prec_dist on counter 1 only, l1d_pend_miss.pending on 0-3", allowed)
	}
	if _, ok := allowed[3]; ok {
		t.Error("a software event got a counter restriction")
	}
}
