// Package testutil holds what the module's tests share: requirements that skip a test,
// naming what the machine lacks, only when it truly lacks it (the development and CI
// machines are root and have perf, BPF and software events), and small helpers that
// start and drain processes.
//
// Only _test.go files import it. It uses the standard library alone, so that every
// package's tests may import it without breaking the import directions
// (internal/archtest).
package testutil
