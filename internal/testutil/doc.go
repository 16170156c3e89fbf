// Package testutil holds what the module's tests share: requirements that skip a test,
// naming what the machine lacks, only when it truly lacks it (the development and CI
// machines are root and have perf, BPF and software events); re-running the test binary
// as a target process; and small fixtures (a pipe, a compiled C probe, a JSON object).
//
// Only _test.go files import it. It uses the standard library alone, so that every
// package's tests may import it without breaking the import directions
// (internal/archtest). Its helpers fail or skip the test they are given; they are safe
// for parallel tests.
package testutil
