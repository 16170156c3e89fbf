// Package relation holds the algebraic relations between performance events that let
// BayesPerf infer an event it did not count from events it did.
//
// A Relation is `LHS op RHS` with op one of =, <=, >=, and each side an expression (Expr)
// of event names, numbers, + - * /, sum(GLOB) and, for relations compiled from vendor
// metric formulas, min, max, conditionals and comparisons. Relations come from three
// sources and all end up as the same three factor kinds (Kind): linear identities,
// linear inequalities and non-linear formulas:
//
//   - Builtins: perf's generic hardware and software events and common tracepoints,
//     each checked against what the kernel counts;
//   - relation files (ParseFile), one relation per line;
//   - Linux pmu-events JSON, compiled by the sibling packages metricexpr and pmuevents.
//
// Relations are written against event names and globs; Bind specialises them to the
// events of one run, expanding sum(GLOB) and dropping relations that mention events the
// run does not have; relations that state the same thing (up to the order of terms and
// sides) are bound once, keeping the strictest tolerance, so that an exact relation of
// the user's is never replaced by a soft built-in. Linearize then gives the form the
// model consumes.
//
// Errors: parsing returns errors that name file:line:col; evaluation returns an error
// (never panics) on division by zero, unbound sums and unknown functions. Relations and
// expressions are immutable values once built and safe for concurrent reads.
package relation
