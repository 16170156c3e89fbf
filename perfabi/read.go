package perfabi

// ReadSize is the number of bytes read(2) returns for read_format rf and n group members
// (n is ignored without FormatGroup). The layouts (perf_read_one and perf_read_group in
// kernel/events/core.c) are { value, enabled, running, id, lost } for one event and
// { nr, enabled, running, { value, id, lost } x nr } for a group, each field present only
// when its bit is set.
func ReadSize(rf uint64, n int) int {
	per := 8
	if rf&FormatID != 0 {
		per += 8
	}
	if rf&FormatLost != 0 {
		per += 8
	}
	hdr := 0
	if rf&FormatTotalTimeEnabled != 0 {
		hdr += 8
	}
	if rf&FormatTotalTimeRunning != 0 {
		hdr += 8
	}
	if rf&FormatGroup != 0 {
		return 8 + hdr + n*per
	}
	return hdr + per
}
