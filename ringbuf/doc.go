// Package ringbuf reads and writes the perf mmap ring buffer byte for byte: the
// perf_event_mmap_page header, the data_head/data_tail protocol, and every PERF_RECORD_*
// a tool can see, so the sidecar can consume the kernel's rings and produce mirror rings
// that unmodified tools parse as if the kernel had written them.
//
// # Memory
//
// A ring is a []byte provided by the caller: the header page (a perf_event_mmap_page,
// see [MetaPage] and the Off* constants) followed by data_size bytes of data pages, with
// data_size a power of two. The package never maps memory itself except in the thin
// helpers of mmap_linux.go; the ring algorithm touches only the slice and atomic loads
// and stores of data_head and data_tail, so wrap-around, overwrite and LOST accounting
// are tested in plain memory. The slice must be 8-byte aligned (mmap'd memory always is).
//
// # Reading: borrow, then commit
//
// [Reader] follows the protocol of tools/lib/perf (read_init, read_event, consume,
// read_done): [Reader.Next] hands out the next record as a view into the ring, or, when
// the record wraps the end of the data area, as a copy in a scratch buffer; either stays
// valid until Commit or Discard, so a batch of records can be borrowed at once (a
// producer running more than data_size bytes ahead of data_tail is reported as
// ErrCorrupt). [Reader.CopyNext] is the copying reader on top. data_tail is published only by
// [Reader.Commit], after the caller is done with every record it has borrowed, so the
// kernel never overwrites a record that is still being read. Backward (write_backward,
// overwrite) rings are read from data_head towards older records; they have no data_tail.
//
// # Writing: playing the kernel's part
//
// [Writer] produces a mirror ring exactly as kernel/events/ring_buffer.c does: it checks
// space against data_tail, writes the record bytes, then publishes data_head. When the
// ring is full the record is dropped and counted, and the next record that fits is
// preceded by a PERF_RECORD_LOST carrying the count, the id of the event being written
// and its sample_id trailer, in the same reservation (__perf_output_begin). It reports
// when the kernel would wake the reader (wakeup_events, wakeup_watermark) so the caller
// can signal poll waiters.
//
// # Memory ordering
//
// The barrier table, once for the whole package (tools/include/linux/ring_buffer.h and
// the comment in kernel/events/ring_buffer.c use the letters A-D):
//
//	who            operation                      Go                       pairs with
//	kernel/Writer  load data_tail  (A)            atomic.LoadUint64        D: reader's store-release of data_tail
//	kernel/Writer  store data_head (B)            atomic.StoreUint64       C: reader's load-acquire of data_head
//	Reader         load data_head  (C)            atomic.LoadUint64        B: smp_wmb before data_head store
//	Reader         store data_tail (D)            atomic.StoreUint64       A: control dependency on data_tail
//
// Go's sync/atomic operations are sequentially consistent, which is at least as strong as
// the acquire/release pairs the kernel requires; the names in the code (loadHeadAcquire,
// storeTailRelease, ...) say which row of this table each access is. Record bytes are
// read and written with plain memory accesses between those operations.
//
// # Records
//
// [Decode] turns one record (header included) into a typed value ([Mmap], [Sample], ...)
// according to a [Format] (the attr's sample_type, read_format, sample_id_all and register
// masks); [Append] encodes it back. For records the kernel produced, Append(Decode(b)) == b
// byte for byte: decoding is strict about sizes (a body must be consumed exactly), and the
// only bytes it does not keep are the NUL padding of strings, which the kernel zeroes
// (a KSYMBOL name's padding may in principle hold stale bytes; re-encoding zeroes it). Byte slices in decoded records alias the input. Unknown record types
// decode to [Unknown], which keeps the body untouched. [DecodeSample] decodes a SAMPLE into
// a caller-owned value without allocating once its slices have grown. [FindReadBlock]
// locates the counter values of a SAMPLE's READ block or of a READ record so the
// correction stage can rewrite them in place without re-encoding the rest.
//
// # Errors and concurrency
//
// Every function returns an error value for malformed or truncated input, saying which
// record type, which field and at which byte offset; nothing panics or reads out of
// bounds on any bytes, whoever wrote them. Errors wrap [ErrTruncated], [ErrCorrupt] or
// [ErrNoSpace] so callers can test with errors.Is. A Reader or a Writer is used by one
// goroutine; the other side of the ring is another process (or goroutine) that
// communicates only through the ring memory, per the table above.
package ringbuf
