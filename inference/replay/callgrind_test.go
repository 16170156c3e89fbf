package replay

import (
	"strings"
	"testing"
)

const cgPart = `# callgrind format
version: 1
part: 5

desc: Timerange: Basic block 1345409 - 1677979
desc: Trigger: --dump-every-bb=200000

positions: line
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim
summary: 1278277 268672 35524 0 4801 246 0 0 149 319114 14708

ob=(5) /usr/bin/gzip
fn=(1) main
0 1278275 268672 35524

totals: 1278275 268672 35524 0 4801 246 0 0 149 319114 14708
`

func TestParseCallgrindPart(t *testing.T) {
	p, err := ParseCallgrindPart(strings.NewReader(cgPart))
	if err != nil {
		t.Fatal(err)
	}
	if p.Part != 5 || p.BBs != 1677979-1345409 || len(p.Events) != 13 || len(p.Counts) != 13 {
		t.Fatalf("part %+v", p)
	}
	if p.Counts[0] != 1278275 || p.Counts[10] != 14708 || p.Counts[12] != 0 {
		t.Fatalf("counts %v: want the totals line, trailing zeros restored", p.Counts)
	}
	noTotals := strings.Split(cgPart, "totals:")[0]
	if p, err := ParseCallgrindPart(strings.NewReader(noTotals)); err != nil || p.Counts[0] != 1278277 {
		t.Fatalf("without totals: %v, %v; want the summary line", p, err)
	}
	q := *p
	q.Part = 6
	tr, err := CallgrindTrace([]*CallgrindPart{&q, p})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Slices() != 2 || tr.Meta["basic_blocks"][0] != p.BBs || tr.EventIndex("Bcm") != 10 {
		t.Fatalf("trace %+v", tr)
	}
	q.Part = 8
	if _, err := CallgrindTrace([]*CallgrindPart{p, &q}); err == nil {
		t.Error("gap between parts accepted")
	}
	for _, bad := range []string{"", "events: A\nsummary: 1 2\n", "summary: 1\n", "events: A A\nsummary: 1 1\n", "events: A\nsummary: x\n", "desc: Timerange: Basic block 9 - 1\nevents: A\nsummary: 1\n", "events: A\nsummary: 1\nevents: A B\n"} {
		if _, err := ParseCallgrindPart(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func FuzzParseCallgrindPart(f *testing.F) {
	f.Add(cgPart)
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ParseCallgrindPart(strings.NewReader(in))
		if err != nil {
			return
		}
		if len(p.Events) == 0 || len(p.Counts) != len(p.Events) || p.BBs < 0 {
			t.Fatalf("inconsistent part %+v", p)
		}
	})
}
