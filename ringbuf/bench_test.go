package ringbuf

import (
	"testing"
)

// benchFormat gives the typical 48-byte counting sample: header, IP, TID and a READ
// block with value, time_enabled and time_running.
var benchFormat = Format{
	SampleType: SampleIP | SampleTID | SampleRead,
	ReadFormat: FormatTotalTimeEnabled | FormatTotalTimeRunning,
}

// BenchmarkMirrorCopy measures the sidecar's sampling path: read a record from a kernel
// ring (borrow), copy it, rewrite its READ value and times in place, write it into a
// mirror ring and commit. One iteration moves one full 1 MiB ring of 48-byte samples
// (21845 records, so that stopping the timer, which reads memory statistics under
// ReportAllocs, costs little per record); refilling the source ring and consuming the
// mirror (the kernel's and the tool's work) are not timed.
func BenchmarkMirrorCopy(b *testing.B) {
	const dataSize = 1 << 20
	src, dst := newMem(dataSize), newMem(dataSize)
	kw, err := NewWriter(src, WriterOptions{PageSize: testPage}) // plays the kernel
	if err != nil {
		b.Fatal(err)
	}
	r, _ := NewReader(src, ReaderOptions{PageSize: testPage})
	mw, _ := NewWriter(dst, WriterOptions{Format: benchFormat, PageSize: testPage})
	tool, _ := NewReader(dst, ReaderOptions{PageSize: testPage})
	s := &Sample{IP: 0x401000, Pid: 1, Tid: 2, Read: ReadValues{TimeEnabled: 1000, TimeRunning: 250, Values: []CounterValue{{Value: 12345}}}}
	sample, err := Append(nil, s, &benchFormat)
	if err != nil || len(sample) != 48 {
		b.Fatalf("bench sample is %d bytes (%v), want 48", len(sample), err)
	}
	fill := func() int {
		n := 0
		for {
			ok, _, _ := kw.Write(sample)
			if !ok {
				kw.lost = 0 // the kernel would report it; the bench only wants a full ring
				return n
			}
			n++
		}
	}
	var buf [256]byte
	records := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		records += fill()
		tool.Discard()
		b.StartTimer()
		for rec := range allRecords(b, r) {
			c := buf[:copy(buf[:], rec)]
			blk, err := FindReadBlock(c, &benchFormat)
			if err != nil {
				b.Fatal(err)
			}
			en, _ := blk.TimeEnabled()
			run, _ := blk.TimeRunning()
			blk.SetValue(0, blk.Value(0)*en/max(run, 1)) // stands in for the corrected value
			blk.SetTimes(en, en)
			if ok, _, err := mw.Write(c); !ok || err != nil {
				b.Fatalf("mirror write: %v %v", ok, err)
			}
		}
		r.Commit()
	}
	b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(records), "ns/record")
}

// BenchmarkDecodeSample decodes samples into a reused Sample, in size tiers.
func BenchmarkDecodeSample(b *testing.B) {
	callchain := make([]uint64, 32)
	for i := range callchain {
		callchain[i] = 0x400000 + uint64(i)*64
	}
	tiers := []struct {
		name string
		f    Format
		s    Sample
	}{
		{"48B", benchFormat, Sample{IP: 1, Pid: 2, Tid: 3, Read: ReadValues{TimeEnabled: 4, TimeRunning: 5, Values: []CounterValue{{Value: 6}}}}},
		{"group8", Format{SampleType: SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleCPU | SamplePeriod | SampleRead,
			ReadFormat: FormatGroup | FormatID | FormatTotalTimeEnabled | FormatTotalTimeRunning},
			Sample{Read: ReadValues{Values: make([]CounterValue, 8)}}},
		{"callchain32", Format{SampleType: SampleIP | SampleTID | SampleTime | SampleCPU | SamplePeriod | SampleCallchain},
			Sample{Callchain: callchain}},
	}
	for _, tc := range tiers {
		b.Run(tc.name, func(b *testing.B) {
			rec, err := Append(nil, &tc.s, &tc.f)
			if err != nil {
				b.Fatal(err)
			}
			var s Sample
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if err := DecodeSample(rec, &tc.f, &s); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(len(rec)), "bytes/record")
		})
	}
}
