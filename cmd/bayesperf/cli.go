package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/bayesperf/bayesperf/internal/perf"
)

// Every failure a subcommand reports goes through exitWith: one line on stderr,
// "bayesperf CMD: what is wrong; what to do", and one exit status for each kind of
// failure, the same in every subcommand:
//
//	2    what the user gave is wrong: a bad flag or value, an unknown event, no command,
//	     an unreadable or malformed file named on the command line (a usageError);
//	127  the command to run cannot be started (a startError), as a shell says;
//	1    anything else: the kernel refused (permissions, unsupported events), I/O.
const (
	exitFailure  = 1
	exitUsage    = 2
	exitNotFound = 127
)

// usageError is a bad command line, or a bad input the command line named: exit status 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usageErr(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// startError is a command that cannot be started: exit status 127.
type startError struct{ err error }

func (s startError) Error() string { return s.err.Error() }
func (s startError) Unwrap() error { return s.err }

// exitCode is the exit status for err (see exitWith).
func exitCode(err error) int {
	var ue usageError
	var se startError
	switch {
	case errors.As(err, &se):
		return exitNotFound
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitFailure
}

// exitWith prints err as the one line of subcommand name's failure and returns its exit
// status. A message that spans lines (a wrapped error that carried a newline) is folded
// onto one, so that a script reading our stderr sees one line per failure.
func exitWith(name string, err error) int {
	fmt.Fprintf(os.Stderr, "bayesperf %s: %s\n", name, oneLine(err.Error()))
	return exitCode(err)
}

// oneLine folds a message onto one line: the lines of an errors.Join become "a ; b".
func oneLine(msg string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " ; ")), " ")
}

// eventListErr classifies an error of perf.ParseEvents: the event list's fault (exit 2),
// unless the system is (no usable tracefs: exit 1).
func eventListErr(err error) error {
	if errors.Is(err, perf.ErrTracefs) {
		return err
	}
	return usageError{err}
}

// lookCommand finds argv[0] as exec would and returns the command, or a startError that
// says what to do.
func lookCommand(argv []string) (*exec.Cmd, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	p, err := exec.LookPath(argv[0])
	if err != nil {
		var why string
		switch {
		case argv[0] == "perf" && errors.Is(err, exec.ErrNotFound):
			why = "not found in $PATH; install it (Debian: apt-get install linux-perf) or put it on $PATH"
		case errors.Is(err, exec.ErrNotFound) && !strings.Contains(argv[0], "/"):
			why = "not found in $PATH; check the name, or give its path"
		case errors.Is(err, os.ErrNotExist) || errors.Is(err, exec.ErrNotFound):
			why = "no such file"
		case errors.Is(err, os.ErrPermission):
			why = "not executable (permission denied); chmod +x it or run it through its interpreter"
		default:
			why = err.Error()
		}
		return nil, startError{fmt.Errorf("cannot run %s: %s", argv[0], why)}
	}
	cmd.Path = p
	return cmd, nil
}

// parseCmdLine parses args with fs, printing help on stdout for -h and --help. It returns
// (exit, true) when the command must end now: after the help, or after the one line that
// says what is wrong with the flags.
func parseCmdLine(name, help string, fs *flag.FlagSet, args []string) (int, bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(splitShortValues(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Print(help)
			return 0, true
		}
		return exitWith(name, usageErr("%v (see 'bayesperf %s --help')", err, name)), true
	}
	return 0, false
}

// flagHelp renders head followed by fs's flags and their defaults, for commands whose
// help is generated from their flag set.
func flagHelp(fs *flag.FlagSet, head string) string {
	var b strings.Builder
	b.WriteString(head)
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return b.String()
}
