// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// CommandName is the subcommand of otelcol-gym that instruments a command.
const CommandName = "instrument"

// DefaultEndpoint is the embedded default's OTLP/HTTP endpoint.
const DefaultEndpoint = "http://127.0.0.1:4318"

const defaultServiceName = "nemo-gym"

// options are the command line of `otelcol-gym instrument`.
type options struct {
	settings
	export        bool
	python        string   // --python: the Python to probe instead of the command's
	collector     string   // --collector: auto, never or always
	collectorSets []string // --collector-set: --set flags of the collector instrument starts
	noOverrides   bool     // --no-gym-overrides
	command       []string // after the flags (and --)
}

// RunCommand is `otelcol-gym instrument [flags] -- <command> [args...]`:
// it runs the command so that every Gym process it starts sends OTLP to a
// collector, and returns an exit code only when it could not (on success it
// becomes the command: execve). With --export it prints the settings as
// shell lines instead. args are the arguments after "instrument".
func RunCommand(args []string, stderr io.Writer) int {
	if dir := os.Getenv(cleanupEnv); dir != "" {
		return runCleanup(dir, os.Getenv(cleanupPIDEnv))
	}
	o, code := parseOptions(args, stderr)
	if code >= 0 {
		return code
	}
	if o.export {
		return runExport(o, os.Stdout, stderr)
	}
	return runInstrumented(o, stderr)
}

func parseOptions(args []string, stderr io.Writer) (options, int) {
	fs := flag.NewFlagSet("otelcol-gym "+CommandName, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.endpoint, "endpoint", DefaultEndpoint, "the `URL` of the collector's OTLP/HTTP endpoint")
	fs.StringVar(&o.telemetry, "telemetry", "auto", "auto: the richest this Python can give; gym: Gym's own (the installed nemo-lens if it works, else otelcol-gym's bridge); generic: OpenTelemetry's FastAPI, ASGI and aiohttp-client instrumentation")
	fs.StringVar(&o.serviceName, "service-name", envOr("OTEL_SERVICE_NAME", defaultServiceName), "the service.name each Gym process's name is put under (<name>/<server>)")
	fs.StringVar(&o.runID, "run-id", os.Getenv("NEMO_GYM_OTEL_RUN_ID"), "the run id (nemo.run.id) of every process; empty: Gym's own telemetry mints one per gym env start")
	fs.BoolVar(&o.export, "export", false, "print the settings as export lines for a shell (eval \"$(otelcol-gym instrument --export)\") instead of running a command")
	fs.StringVar(&o.pythonDir, "python-dir", "", "with --export: write the Python side into `DIR` (default: a new private directory, left for you to remove)")
	fs.StringVar(&o.python, "python", "", "the `PYTHON` interpreter to probe (default: the command's, from its shebang; with --export, that of the gym on PATH)")
	fs.StringVar(&o.collector, "collector", collectorAuto, "auto: start otelcol-gym on the embedded default when no collector answers at --endpoint, drain it when the command ends and sum the run up; never: leave that to you; always: start one (none may answer there)")
	fs.Func("collector-set", "a `key=value` the collector instrument starts gets as --set (repeatable), e.g. extensions::health_check::endpoint=127.0.0.1:13134", func(v string) error {
		if !strings.Contains(v, "=") {
			return errors.New("want key=value, as otelcol-gym's --set")
		}
		o.collectorSets = append(o.collectorSets, v)
		return nil
	})
	fs.BoolVar(&o.noOverrides, "no-gym-overrides", false, "do not add ++"+observabilityKey+"=true ++"+captureDirKey+"=<capture dir> to a gym or ng_* command that lacks them")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: otelcol-gym %[1]s [flags] -- <command> [args...]\n"+
			"       otelcol-gym %[1]s --export [flags]\n\n"+
			"Runs the command so that every NeMo Gym process it starts (the gym CLI, each server; not Ray's)\n"+
			"sends its spans to the collector over OTLP/HTTP, one service.name per Gym server, W3C trace context on,\n"+
			"with the richest telemetry the command's Python can give, and says on stderr which and why.\n"+
			"When no collector answers at --endpoint, it starts one (this binary, on the embedded default, writing to\n"+
			"$NEMO_GYM_CAPTURE_DIR, else ./captures), drains it when the command ends and prints a summary of the run.\n"+
			"To gym and ng_* commands it adds ++observability_enabled=true ++model_call_capture_dir=<that dir>\n"+
			"when they lack them.\n\n", CommandName)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, 0
		}
		return o, 2
	}
	o.command = fs.Args()
	if err := o.validate(); err != nil {
		fmt.Fprintf(stderr, "otelcol-gym %s: %v\n", CommandName, err)
		return o, 2
	}
	return o, -1
}

func (o options) validate() error {
	if err := checkEndpoint(o.endpoint); err != nil {
		return fmt.Errorf("--endpoint %q: %w", o.endpoint, err)
	}
	if !slices.Contains([]string{"auto", telemetryGym, telemetryGeneric}, o.telemetry) {
		return fmt.Errorf("--telemetry %q: want auto, gym or generic", o.telemetry)
	}
	if o.serviceName == "" {
		return errors.New("--service-name is empty")
	}
	switch {
	case o.export && len(o.command) > 0:
		return fmt.Errorf("--export prints settings and runs no command (got %q)", o.command[0])
	case !o.export && len(o.command) == 0:
		return errors.New("no command: otelcol-gym instrument -- gym env start ... (or --export)")
	case !o.export && o.pythonDir != "":
		return errors.New("--python-dir goes with --export (a command gets a private directory, removed when it ends)")
	case !slices.Contains([]string{collectorAuto, collectorNever, collectorAlways}, o.collector):
		return fmt.Errorf("--collector %q: want auto, never or always", o.collector)
	}
	if o.collector == collectorAlways {
		if _, err := startableAt(o.endpoint); err != nil {
			return fmt.Errorf("--collector=always with --endpoint %q: %w", o.endpoint, err)
		}
	}
	return nil
}

// runInstrumented starts a collector when the run needs one, probes the
// command's Python, says what it chose, and runs the command: it becomes
// the command (execve) when it started no collector, else it supervises
// it (superviseCommand). A command that is not Gym is run untouched.
func runInstrumented(o options, stderr io.Writer) int {
	program, err := exec.LookPath(o.command[0])
	if err != nil {
		fmt.Fprintf(stderr, "otelcol-gym %s: %v\n", CommandName, err)
		return 127
	}
	gym := isGymCLI(program) && !o.noOverrides
	plan, err := planRun(o.command[1:], gym)
	if err != nil {
		fmt.Fprintf(stderr, "otelcol-gym %s: the capture dir: %v\n", CommandName, err)
		return 2
	}
	own, code := o.collectorFor(plan, stderr)
	if code >= 0 {
		return code
	}
	run := func(argv, env []string) int {
		if own == nil {
			return execCommand(program, argv, env, stderr)
		}
		return superviseCommand(program, argv, env, own, plan, stderr)
	}
	env := os.Environ()
	dir, err := os.MkdirTemp("", privatePrefix+"*")
	if err == nil {
		err = writePythonFiles(dir)
	}
	if err == nil {
		err = startCleanup(dir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "otelcol-gym %s: %v; running %s uninstrumented\n", CommandName, err, o.command[0])
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
		return run(o.command, env)
	}
	note := ""
	if len(plan.overrides) > 0 {
		note = "; added " + strings.Join(plan.overrides, " ") + " (--no-gym-overrides: not)"
	}
	argv := o.command
	c, ok := chooseFor(o, program, dir, env, note, stderr)
	if ok {
		o.pythonDir, o.announced = filepath.Join(dir, pythonDirName), c.Telemetry
		env = o.environ(env)
		if c.Telemetry != telemetryOff && o.collector == collectorNever {
			reportCollector(o.endpoint, stderr)
		}
		if gym {
			argv = append(slices.Clip(argv), plan.overrides...)
		}
	}
	return run(argv, env)
}

// collectorFor starts the collector of the run when --collector asks for
// one and returns it, nil when the command is to use what answers at the
// endpoint (or nothing). code >= 0: the command must not run.
func (o options) collectorFor(plan runPlan, stderr io.Writer) (*ownCollector, int) {
	if o.collector == collectorNever {
		return nil, -1
	}
	answerErr := collectorAnswers(o.endpoint)
	switch {
	case o.collector == collectorAuto && answerErr == nil:
		return nil, -1 // the user's collector: used and left alone
	case o.collector == collectorAlways && answerErr == nil:
		fmt.Fprintf(stderr, "otelcol-gym %s: a collector already answers at %s and --collector=always starts one there: drop --collector=always to use it, or pass another --endpoint; the command was not run\n", CommandName, o.endpoint)
		return nil, 125
	case !errors.Is(answerErr, syscall.ECONNREFUSED):
		fmt.Fprintf(stderr, "otelcol-gym %s: something that is not an OTLP collector answers at %s (%v): stop it, or pass --endpoint with a free port (or a collector's); the command was not run\n", CommandName, o.endpoint, answerErr)
		return nil, 125
	}
	addr, err := startableAt(o.endpoint)
	if err != nil {
		// auto: nothing to start there; the command runs as with never.
		fmt.Fprintf(stderr, "otelcol-gym %s: no collector answers at %s (%v), and %v; running the command anyway\n", CommandName, o.endpoint, answerErr, err)
		return nil, -1
	}
	own, err := startCollector(o.endpoint, addr, plan, o.collectorSets)
	if err != nil {
		fmt.Fprintf(stderr, "otelcol-gym %s: %v\n", CommandName, err)
		fmt.Fprintf(stderr, "otelcol-gym %s: the collector did not start, so the command was not run; --collector-set=<key>=<value> passes a --set to it (e.g. to move a port), --collector=never runs the command without it\n", CommandName)
		return nil, 125
	}
	fmt.Fprintf(stderr, "otelcol-gym %s: no collector answered at %s: started otelcol-gym (pid %d) writing to %s, log in %s; it is drained when the command ends\n", CommandName, o.endpoint, own.pid(), plan.captureDir, collectorLogName)
	return own, -1
}

// chooseFor probes the Python of program (or of --python, or of the `gym`
// on PATH when program is no Python or one without Gym) and prints the one
// line that says what it chose. ok: the command is Gym and gets the settings.
func chooseFor(o options, program, dir string, env []string, note string, stderr io.Writer) (choice, bool) {
	var c choice
	var err error
	for _, python := range candidatePythons(o.python, program) {
		if c, err = probe(python, dir, o.telemetry, env); err != nil || c.Telemetry != telemetryNotGym {
			break
		}
	}
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "otelcol-gym %s: %v; each Gym process decides for itself, spans to %s%s\n", CommandName, err, o.endpoint, note)
		return choice{}, true
	case c.Telemetry == "":
		fmt.Fprintf(stderr, "otelcol-gym %s: not Gym (%s is no Python program and no gym is on PATH): running it untouched\n", CommandName, program)
		return c, false
	case c.Telemetry == telemetryNotGym:
		fmt.Fprintf(stderr, "otelcol-gym %s: %s: running it untouched\n", CommandName, c.Summary)
		return c, false
	}
	fmt.Fprintf(stderr, "otelcol-gym %s: %s (%s, nemo-gym %s); %s%s\n", CommandName, c.Summary, c.Python, c.Gym, destination(c.Telemetry, env, o.endpoint), note)
	return c, true
}

// candidatePythons are the Pythons that may run Gym for program, in order.
func candidatePythons(explicit, program string) []string {
	if explicit != "" {
		return []string{explicit}
	}
	var out []string
	if p, ok := pythonOf(program); ok {
		out = append(out, p)
	}
	if gym, err := exec.LookPath("gym"); err == nil && gym != program {
		if p, ok := pythonOf(gym); ok && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// reportCollector says, in one line, when no collector answers at endpoint.
func reportCollector(endpoint string, stderr io.Writer) {
	if err := collectorAnswers(endpoint); err != nil {
		fmt.Fprintf(stderr, "otelcol-gym %s: no collector answers at %s (%v): start one (otelcol-gym, or make run) or pass --endpoint; running the command anyway\n", CommandName, endpoint, err)
	}
}

// execCommand becomes the command; it returns only when it could not.
func execCommand(program string, argv, env []string, stderr io.Writer) int {
	err := syscall.Exec(program, argv, env)
	fmt.Fprintf(stderr, "otelcol-gym %s: %s: %v\n", CommandName, argv[0], err)
	return 126
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
