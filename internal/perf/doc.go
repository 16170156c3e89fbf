// Package perf is the project's thin layer over perf_event_open(2): the attr ABI, opening,
// enabling and reading events, and perf's event-name syntax resolved through sysfs and
// tracefs.
//
// Errors are wrapped with the action that failed; syscalls never panic. Types are not safe
// for concurrent use unless stated otherwise.
package perf
