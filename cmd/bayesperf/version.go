package main

import (
	"fmt"
	"runtime/debug"
)

// runVersion is bayesperf version.
func runVersion(args []string) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Print("usage: bayesperf version\n\nPrints the version of bayesperf (its VCS revision, or devel).\n")
		return 0
	}
	if len(args) > 0 {
		return exitWith("version", usageErr("unexpected arguments %q: version takes none", args))
	}
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v = s.Value
			}
		}
	}
	fmt.Println("bayesperf", v)
	return 0
}
