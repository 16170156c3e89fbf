// Package perfabi is the perf_event_open(2) ABI as Go sees it: struct perf_event_attr
// (Attr) and its one decoder, the attr flag bits, the read_format bits, and the layout
// read(2) returns for them: where its fields lie (LayoutRead), its one decoder
// (DecodeRead) and encoder (AppendRead). Open is the one perf_event_open(2) call: it
// passes an Attr in that layout, so no other type of the attr is needed anywhere.
//
// The ABI is the host's: the kernel and the tool lay these structures out in the byte
// order of the machine they run on. ByteOrder (binary.NativeEndian) is that decision,
// made once; every encoder and decoder of perf structures in the module uses it.
//
// It is a leaf: it imports only the standard library, so the shim, the ring reader, the
// perf layer and the BPF collector can all share it (internal/archtest). Decoders return
// errors, never panic, on any bytes; the package holds no state.
package perfabi
