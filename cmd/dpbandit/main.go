// Command dpbandit runs differentially private bandit experiments.
//
// Usage:
//
//	dpbandit                      run the quick reproduction into results/quick
//	dpbandit run [flags]          run one experiment (flags or --config FILE)
//	dpbandit reproduce [flags]    run every embedded preset and write a report
//	dpbandit list                 list the algorithms and presets
//	dpbandit bounds [flags]       evaluate the papers' finite-armed regret bounds
//	dpbandit verify [FILE]        exact privacy of a finite policy given as tables
//	dpbandit audit [flags]        empirical privacy audit of the private policies
//	dpbandit merge DIR... --out D combine the shards of a run or reproduction
//	dpbandit serve [flags]        the private decision service
//	dpbandit loadtest [flags]     load a running service, report throughput and latency
//
// Run `dpbandit COMMAND -h` for a command's flags. Bad flags or configs
// print a one-line error naming the field and exit with status 2, before
// any computation; an audit whose verdict is not the expected one exits
// with status 3; an interrupted run (Ctrl-C or SIGTERM) keeps the runs it
// finished, writes them, and exits with status 130.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dpbandit/dpbandit/experiment"
	"github.com/dpbandit/dpbandit/internal/liberr"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	serving := len(os.Args) > 1 && os.Args[1] == "serve"
	guard := new(exitGuard)
	go func() {
		if serving {
			return // serve shuts down gracefully by itself
		}
		// Long steps check for cancellation cooperatively; whatever has
		// not stopped 0.9 s after the signal (a long constructor, say)
		// is stopped here, unless it is writing finished results
		// (holdExit): those are written, and the command returns.
		// Files are written atomically, so none is left half-written.
		<-ctx.Done()
		time.Sleep(900 * time.Millisecond)
		guard.forcedExit()
		fmt.Fprintln(os.Stderr, "dpbandit: interrupted; nothing was written")
		os.Exit(exitInterrupted)
	}()
	code := run(context.WithValue(ctx, exitGuardKey{}, guard), os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// exitGuard keeps main's watchdog from stopping the process once a
// command writes finished results: holdExit locks hold for the rest of
// the process, the watchdog locks it before it exits, and first runs the
// cleanups the command registered (onForcedExit).
type exitGuard struct {
	hold    sync.Mutex
	mu      sync.Mutex // guards cleanup
	cleanup []func()
}

// forcedExit waits for a command writing its results, which then never
// returns to it (the process exits with the command), or else runs the
// command's cleanups: the caller exits next.
func (g *exitGuard) forcedExit() {
	g.hold.Lock()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, f := range g.cleanup {
		f()
	}
}

// onForcedExit registers f to run if main's watchdog (if ctx carries
// one) stops the process: to remove a temporary folder, say.
func onForcedExit(ctx context.Context, f func()) {
	if g, ok := ctx.Value(exitGuardKey{}).(*exitGuard); ok {
		g.mu.Lock()
		g.cleanup = append(g.cleanup, f)
		g.mu.Unlock()
	}
}

// exitGuardKey is the context key of main's exitGuard.
type exitGuardKey struct{}

// holdExit tells main's watchdog (if ctx carries one) that the command
// now writes finished results: an interruption no longer stops the
// process, which exits when the command returns. Call it at most once.
func holdExit(ctx context.Context) {
	if g, ok := ctx.Value(exitGuardKey{}).(*exitGuard); ok {
		g.hold.Lock()
	}
}

// limitMemory makes --max-memory the Go runtime's soft memory limit
// while an experiment runs, and returns what restores the previous one.
// The estimate that --max-memory is checked against counts live data;
// without a limit the garbage collector lets the heap grow to twice the
// live data before it collects (GOGC=100), so that a run estimated at
// 3 GiB could hold 6 GiB. With it, the collector works harder instead
// as the heap nears the limit.
func limitMemory(mib int64) (restore func()) {
	limit := int64(math.MaxInt64) // beyond it (more than 8 EiB): no limit
	if mib <= math.MaxInt64>>20 {
		limit = mib << 20
	}
	prev := debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(prev) }
}

// Exit statuses.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitAudit       = 3
	exitInterrupted = 130
)

// auditError marks an audit whose verdict is not the expected one (exit
// status 3).
type auditError struct{ error }

// interruption is an interrupted command's error (context.Canceled)
// with what it kept, as the one line of exit status 130 says it.
type interruption struct {
	error
	kept string
}

// Unwrap lets errors.Is see context.Canceled.
func (i interruption) Unwrap() error { return i.error }

// usageError marks errors in the command line or config (exit status 2).
type usageError struct{ error }

// Unwrap lets errors.As see the error inside (a FieldError keeps its
// field's name in the message).
func (u usageError) Unwrap() error { return u.error }

// command is one of dpbandit's commands: its name and its function, which
// runs it on its arguments (after the name), writing its results to stdout
// and its progress to stderr.
type command struct {
	name string
	run  func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands returns dpbandit's commands, in the order the message for an
// unknown command lists them.
func commands() []command {
	return []command{
		{"run", runCmd}, {"reproduce", reproduce}, {"merge", merge}, {"list", list},
		{"bounds", bounds}, {"verify", verify}, {"audit", auditCmd}, {"evaluate", evaluateCmd},
		{"import", importCmd}, {"serve", serveCmd}, {"loadtest", loadtestCmd},
	}
}

// dispatch runs the command name on args; an unknown name is a usage
// error listing the commands.
func dispatch(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	var names []string
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, args, stdout, stderr)
		}
		names = append(names, c.name)
	}
	return usageError{fmt.Errorf("unknown command %q (commands: %s; see dpbandit help)", name, strings.Join(names, ", "))}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd, rest := "", args
	if len(args) > 0 {
		cmd, rest = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "":
		fmt.Fprintln(stdout, "dpbandit: running the quick reproduction of every preset into results/quick, replacing an earlier one (about 20 s on a 2-core machine; `dpbandit help` lists the commands)")
		err = reproduce(ctx, []string{"--scale", "quick", "--out", "results/quick", "--force"}, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, version())
		return exitOK
	default:
		err = dispatch(ctx, cmd, rest, stdout, stderr)
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, context.Canceled):
		kept := "the runs finished so far (if any) were written"
		var n interruption
		switch {
		case errors.As(err, &n):
			kept = n.kept
		case cmd == "audit":
			kept = "an audit's results are written only once it finishes: nothing was written"
		}
		fmt.Fprintln(stderr, "dpbandit: interrupted; "+kept)
		return exitInterrupted
	}
	var ue usageError
	var fe *experiment.FieldError
	var ae auditError
	fmt.Fprintln(stderr, "dpbandit: "+message(err))
	switch {
	case errors.As(err, &ue) || errors.As(err, &fe):
		return exitUsage
	case errors.As(err, &ae):
		return exitAudit
	}
	return exitFailure
}

// message is err's message for the command line, seen through the
// command's own wrappers: a library error's Message, without package
// names (a *experiment.FieldError puts its field's name in their place).
func message(err error) string {
	switch e := err.(type) {
	case usageError:
		return message(e.error)
	case auditError:
		return message(e.error)
	}
	return liberr.Message(err)
}

const usage = `dpbandit: differentially private online learning and bandits

Commands:
  dpbandit                    run the quick reproduction of every preset into results/quick
  dpbandit run [flags]        run one experiment, from flags or --config FILE (YAML)
  dpbandit reproduce [flags]  run the embedded presets and write results/reproduction/index.html
  dpbandit list               list the algorithms and presets
  dpbandit bounds [flags]     evaluate the papers' finite-armed regret bounds
  dpbandit verify [FILE]      exact View/Table/Interactive DP of a finite policy (default: 001 Prop. 1(e))
  dpbandit audit [flags]      empirical privacy audit of a private policy (--all: of every one)
  dpbandit evaluate LOG [flags] off-policy evaluation of target policies on logged decisions
  dpbandit merge DIR... --out DIR
                              combine the shards (--shard I/N) of a run or reproduction
  dpbandit import LOG [flags] warm-start an experiment of a running service from a log
  dpbandit serve [flags]      run the private decision service (HTTP API under /v1)
  dpbandit loadtest [flags]   drive a running service and report throughput and latency

Example:
  dpbandit run --algo adac-ucb:beta=4 --algo ucb-doubling:beta=4 \
    --env bernoulli:0.75,0.625,0.5,0.375,0.25 --horizon 1000000 --runs 100 \
    --rho 0.01,0.1,1,10 --seed 7 --out results/adac

Run 'dpbandit COMMAND -h' for the flags of a command.

Exit status: 0 done; 1 failure while computing or writing; 2 bad command
line or config (reported before any computation); 3 an audit's verdict is
not the expected one; 130 interrupted (Ctrl-C, SIGTERM).
`

// version describes the build: the module's version and, for a build
// from a checkout, its VCS revision and time (debug.ReadBuildInfo).
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dpbandit (no build information)"
	}
	v := "dpbandit " + bi.Main.Version
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if r := settings["vcs.revision"]; r != "" {
		v += " revision " + r
		if settings["vcs.modified"] == "true" {
			v += " (modified)"
		}
		if t := settings["vcs.time"]; t != "" {
			v += " of " + t
		}
	}
	return v + " built with " + bi.GoVersion
}
