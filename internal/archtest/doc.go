// Package archtest holds no code: its test enforces the import directions that
// docs/architecture.md draws, so that a change which crosses a boundary fails in CI rather
// than in review.
package archtest
