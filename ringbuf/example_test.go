package ringbuf_test

import (
	"fmt"
	"unsafe"

	"github.com/bayesperf/bayesperf/ringbuf"
)

// alignedMem stands in for an mmap'd ring: a 4 KiB header page and 4 KiB of data.
func alignedMem() []byte {
	words := make([]uint64, 8192/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), 8192)
}

// The sidecar's sampling path: borrow records from the kernel's ring, rewrite the counter
// value of each SAMPLE's READ block in place, write the record into the tool's mirror,
// and commit the kernel ring once the batch is done.
func Example_mirrorCopy() {
	f := ringbuf.Format{
		SampleType: ringbuf.SampleIP | ringbuf.SampleTID | ringbuf.SampleRead,
		ReadFormat: ringbuf.FormatTotalTimeEnabled | ringbuf.FormatTotalTimeRunning,
	}
	kernelMem, mirrorMem := alignedMem(), alignedMem()

	// Stand-in for the kernel: a Writer producing two samples counted 25% of the time.
	kernel, _ := ringbuf.NewWriter(kernelMem, ringbuf.WriterOptions{PageSize: 4096})
	for i := range 2 {
		s := &ringbuf.Sample{IP: 0x401000, Pid: 42, Tid: 42, Read: ringbuf.ReadValues{
			TimeEnabled: 1000, TimeRunning: 250, Values: []ringbuf.CounterValue{{Value: uint64(100 * (i + 1))}}}}
		rec, _ := ringbuf.Append(nil, s, &f)
		kernel.Write(rec)
	}

	in, _ := ringbuf.NewReader(kernelMem, ringbuf.ReaderOptions{PageSize: 4096})
	mirror, _ := ringbuf.NewWriter(mirrorMem, ringbuf.WriterOptions{Format: f, PageSize: 4096})
	var buf []byte
	for {
		rec, err := in.Next()
		if err != nil || rec == nil {
			break
		}
		buf = append(buf[:0], rec...) // the view is only valid until Commit
		if blk, err := ringbuf.FindReadBlock(buf, &f); err == nil {
			en, _ := blk.TimeEnabled()
			run, _ := blk.TimeRunning()
			blk.SetValue(0, blk.Value(0)*en/run) // a corrected value goes here
			blk.SetTimes(en, en)                 // running == enabled: tools do not rescale
		}
		if written, wake, _ := mirror.Write(buf); written && wake {
			fmt.Println("signal the tool's poll")
		}
	}
	in.Commit()

	// What the tool sees in its mirror.
	tool, _ := ringbuf.NewReader(mirrorMem, ringbuf.ReaderOptions{PageSize: 4096})
	var s ringbuf.Sample
	for rec, _ := tool.Next(); rec != nil; rec, _ = tool.Next() {
		if err := ringbuf.DecodeSample(rec, &f, &s); err == nil {
			fmt.Printf("pid %d value %d enabled %d running %d\n", s.Pid, s.Read.Values[0].Value, s.Read.TimeEnabled, s.Read.TimeRunning)
		}
	}
	tool.Commit()
	// Output:
	// pid 42 value 400 enabled 1000 running 1000
	// pid 42 value 800 enabled 1000 running 1000
}
