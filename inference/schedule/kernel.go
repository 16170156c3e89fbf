package schedule

// Kernel returns the schedule Linux produces for the spec, reproduced exactly.
//
// Every event is in a flexible group (a user group or a singleton), ordered by creation.
// At each multiplexing interval the kernel moves the first group of the list to its end
// (rotate_ctx), so in slice t the list has been rotated by t groups. It then schedules
// groups in list order (merge_sched_in) until the FIRST group that does not fit: after
// that failure group_can_go_on refuses every further hardware group in the slice, even
// one that would fit. Groups whose members all sit on fixed counters always fit and use
// no programmable counter; they still take their turn in the rotation, as on a real CPU.
// A group that can never fit (kept with Spec.KeepUnfit) takes its turn too, and fails it:
// in the slice where it comes first nothing is counted, as on a real CPU.
//
// The cycle has one configuration per group (rotation t and t+len(groups) are the same
// list); configurations may repeat within it, exactly as the kernel repeats them.
func Kernel(sp Spec) (*Schedule, error) {
	gs, err := sp.groups()
	if err != nil {
		return nil, err
	}
	s := &Schedule{Fixed: sp.fixedEvents()}
	if len(gs) == 0 {
		return s, nil
	}
	for t := range gs {
		var placed []EventID
		for i := range gs {
			g := gs[(t+i)%len(gs)]
			if g.fixed {
				continue
			}
			if !sp.fits(placed, g.members) {
				break
			}
			placed = append(placed, g.members...)
		}
		s.Configs = append(s.Configs, placed)
	}
	return s, nil
}
