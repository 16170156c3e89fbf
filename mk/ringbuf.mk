# ringbuf: the perf mmap ring buffer. The layout test compiles a C program with gcc over
# <linux/perf_event.h> (linux-libc-dev); the parity tests open software events as root.
APT_PKGS += gcc linux-libc-dev
FUZZ_TARGETS += ./ringbuf:FuzzDecode ./ringbuf:FuzzReader

.PHONY: bench-ringbuf
bench-ringbuf:
	$(GO) test -run '^$$' -bench 'MirrorCopy|DecodeSample' -benchmem ./ringbuf
