// Package bench measures what reading a counter through bayesperf costs: `bayesperf bench
// read` runs the C program in c/readbench.c under `bayesperf run` and summarises, from
// one run, the ns per read of a native read() of a perf fd, of a read served by the
// shim's mirror page, of the raw seqlock floor and of rdpmc self-monitoring (where the
// kernel allows it), and the age of the values the mirror hands out.
//
// Errors: output of the C program is untrusted bytes and is parsed strictly (ParseRaw
// returns an error naming the line); a run whose reads were not served by the mirror is
// an error, not a result. Nothing here panics on input. Functions are safe for concurrent
// use; a run itself takes the machine's CPUs for about a second and should not overlap
// another.
package bench
