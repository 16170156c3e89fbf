package openmetrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// stateVersion is the layout of the state file; another version is not resumed.
const stateVersion = 1

// state is what Resume reads and every Publish after it writes: the counters' values
// and their _created, for the target named by Identity.
type state struct {
	Version int `json:"version"`
	// Identity names the target: the pid label's value and what the caller adds (a
	// process's start time, so that a reused pid is not taken for the same process).
	Identity       string  `json:"identity"`
	CreatedUnixNs  int64   `json:"created_unix_ns"`
	Intervals      int     `json:"intervals"`
	Slices         int     `json:"slices"`
	NumericalFails int     `json:"numerical_failures"`
	Series         []saved `json:"series"`
}

// saved is one series' counters.
type saved struct {
	Event   string  `json:"event"`
	Target  string  `json:"target"`
	Total   float64 `json:"total"`
	Count   uint64  `json:"count"`
	Enabled uint64  `json:"enabled_ns"`
	Running uint64  `json:"running_ns"`
}

// Resume makes the exporter's counters continue those saved in path by an earlier
// exporter of the same target (same pid label, events, CPUs and identity), and keep
// them there: every Publish after it writes path (a new file, then renamed over it)
// before the scrapes see the new values. So a scrape never sees a value path does not
// hold, and a process killed at any point and restarted with the same path resumes
// every counter from at least the last value scraped, under the same _created: the
// counters of a restart never decrease. What the target did while no process counted
// it is in no total.
//
// It reports whether it resumed. Without a usable file (none yet, another target's,
// another version) the exporter starts from 0 with its own _created and takes path
// over. An unreadable or malformed file is an error; so is a path that cannot be
// written (checked at once, so a bad path is said before the measurement starts).
func (x *Exporter) Resume(path, identity string) (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.statePath, x.identity = path, x.pid+" "+identity
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	resumed := false
	if err == nil {
		var st state
		if err := json.Unmarshal(b, &st); err != nil {
			return false, fmt.Errorf("%s: %v", path, err)
		}
		if resumed = x.matches(&st); resumed {
			x.created = time.Unix(0, st.CreatedUnixNs)
			x.intervals, x.base = st.Intervals, Health{Slices: st.Slices, NumericalFailures: st.NumericalFails}
			x.health = x.base
			for i, s := range st.Series {
				e := &x.ev[i]
				e.total, e.count, e.enabled, e.running = s.Total, s.Count, s.Enabled, s.Running
			}
		}
	}
	return resumed, x.save()
}

// matches says whether st was written for this exporter's target and series.
func (x *Exporter) matches(st *state) bool {
	if st.Version != stateVersion || st.Identity != x.identity || len(st.Series) != len(x.ev) || st.CreatedUnixNs <= 0 {
		return false
	}
	return slices.EqualFunc(st.Series, x.events, func(s saved, e string) bool { return s.Event == e }) &&
		slices.EqualFunc(st.Series, x.targets, func(s saved, tg string) bool { return s.Target == tg })
}

// save writes the counters to statePath, atomically: a new file renamed over the old.
// It is called with x.mu held.
func (x *Exporter) save() error {
	st := state{Version: stateVersion, Identity: x.identity, CreatedUnixNs: x.created.UnixNano(),
		Intervals: x.intervals, Slices: x.health.Slices, NumericalFails: x.health.NumericalFailures}
	for i, e := range x.ev {
		st.Series = append(st.Series, saved{Event: x.events[i], Target: x.targets[i], Total: e.total, Count: e.count, Enabled: e.enabled, Running: e.running})
	}
	b, err := json.Marshal(&st)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(x.statePath), filepath.Base(x.statePath)+".tmp*")
	if err != nil {
		return err
	}
	if _, err = f.Write(append(b, '\n')); err == nil {
		err = f.Close()
	} else {
		f.Close()
	}
	if err == nil {
		err = os.Rename(f.Name(), x.statePath)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
