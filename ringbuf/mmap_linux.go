package ringbuf

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Map maps the ring of a perf event fd: the header page and dataPages data pages
// (dataPages must be a power of two, as the kernel requires). A writable mapping is a
// forward ring whose reader publishes data_tail; a read-only mapping puts the kernel in
// overwrite mode (use it with attr.write_backward and ReaderOptions.Backward).
func Map(fd int, dataPages int, writable bool) ([]byte, error) {
	if dataPages <= 0 || dataPages&(dataPages-1) != 0 {
		return nil, fmt.Errorf("map perf ring: %d data pages is not a power of two", dataPages)
	}
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	mem, err := unix.Mmap(fd, 0, (1+dataPages)*os.Getpagesize(), prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map perf ring: %w", err)
	}
	return mem, nil
}

// Unmap releases a mapping returned by Map.
func Unmap(mem []byte) error {
	if err := unix.Munmap(mem); err != nil {
		return fmt.Errorf("unmap perf ring: %w", err)
	}
	return nil
}
