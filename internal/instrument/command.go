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
	export  bool
	python  string   // --python: the Python to probe instead of the command's
	command []string // after the flags (and --)
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
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: otelcol-gym %[1]s [flags] -- <command> [args...]\n"+
			"       otelcol-gym %[1]s --export [flags]\n\n"+
			"Runs the command so that every NeMo Gym process it starts (the gym CLI, each server; not Ray's)\n"+
			"sends its spans to the collector over OTLP/HTTP, one service.name per Gym server, W3C trace context on,\n"+
			"with the richest telemetry the command's Python can give, and says on stderr which and why.\n"+
			"Gym's observability_enabled and model_call_capture_dir come only from its config or command line:\n"+
			"give them as ++observability_enabled=true ++model_call_capture_dir=<the collector's capture dir>.\n\n", CommandName)
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
	}
	return nil
}

// runInstrumented probes the command's Python, says what it chose, and
// becomes the command. A command that is not Gym is run untouched.
func runInstrumented(o options, stderr io.Writer) int {
	program, err := exec.LookPath(o.command[0])
	if err != nil {
		fmt.Fprintf(stderr, "otelcol-gym %s: %v\n", CommandName, err)
		return 127
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
		return execCommand(program, o.command, env, stderr)
	}
	c, ok := chooseFor(o, program, dir, env, stderr)
	if ok {
		o.pythonDir, o.announced = filepath.Join(dir, pythonDirName), c.Telemetry
		env = o.environ(env)
		if c.Telemetry != telemetryOff {
			reportCollector(o.endpoint, stderr)
		}
	}
	return execCommand(program, o.command, env, stderr)
}

// chooseFor probes the Python of program (or of --python, or of the `gym`
// on PATH when program is no Python or one without Gym) and prints the one
// line that says what it chose. ok: the command is Gym and gets the settings.
func chooseFor(o options, program, dir string, env []string, stderr io.Writer) (choice, bool) {
	var c choice
	var err error
	for _, python := range candidatePythons(o.python, program) {
		if c, err = probe(python, dir, o.telemetry, env); err != nil || c.Telemetry != telemetryNotGym {
			break
		}
	}
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "otelcol-gym %s: %v; each Gym process decides for itself, spans to %s\n", CommandName, err, o.endpoint)
		return choice{}, true
	case c.Telemetry == "":
		fmt.Fprintf(stderr, "otelcol-gym %s: not Gym (%s is no Python program and no gym is on PATH): running it untouched\n", CommandName, program)
		return c, false
	case c.Telemetry == telemetryNotGym:
		fmt.Fprintf(stderr, "otelcol-gym %s: %s: running it untouched\n", CommandName, c.Summary)
		return c, false
	}
	fmt.Fprintf(stderr, "otelcol-gym %s: %s (%s, nemo-gym %s); OTLP/HTTP to %s\n", CommandName, c.Summary, c.Python, c.Gym, o.endpoint)
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
