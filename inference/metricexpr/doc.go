// Package metricexpr parses and evaluates the MetricExpr formulas of Linux's pmu-events
// JSON (tools/perf/pmu-events/arch), with the grammar of perf's tools/perf/util/expr.l
// and expr.y.
//
// The grammar, lowest precedence first:
//
//	formula := expr "if" expr "else" formula | expr
//	expr    := expr "|" expr | expr "^" expr | expr "&" expr
//	         | expr ("<" | ">") expr | expr ("+" | "-") expr
//	         | expr ("*" | "/" | "%") expr | "-" expr | primary
//	primary := NUMBER | ID | LITERAL | "(" formula ")"
//	         | ("min" | "max" | "d_ratio") "(" formula "," formula ")"
//	         | ("source_count" | "has_event" | "strcmp_cpuid_str") "(" ID ")"
//
// NUMBER is decimal with optional fraction and exponent (1e9, 0.5, 1e-3). LITERAL is '#'
// followed by [0-9a-zA-Z_.-] (#SMT_on, #slots, #num_cpus_online), matched without regard
// to case as perf does. ID is an event or metric name made of [0-9a-zA-Z_.:@?] and the
// escapes \- \, \= (and, beyond perf, a backslash before any other non-blank byte); as in
// perf, '@' stands for '/' so that cpu@EVENT\,cmask\=1@ names the event cpu/EVENT,cmask=1/.
// Whether an ID is an event or another metric is decided by the caller (Resolve).
//
// Evaluation follows expr.y: | & ^ and % work on values truncated to integers, < and >
// give 1 or 0, division by zero gives NaN (perf prints it as such), d_ratio(a, 0) is 0.
//
// Errors: Parse returns a *SyntaxError with the byte offset; Eval returns an error for an
// ID or literal the environment cannot resolve. Nothing panics on any input; nesting is
// bounded. Parsed expressions are immutable and safe for concurrent use.
package metricexpr
