// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package config // import "github.com/otelcol-gym/otelcol-gym/config"

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Checking that the variables a configuration reads are set.
//
// The collector's env provider turns an unset variable with no default into
// an empty value and logs a warning that `validate` never prints; the user
// then sees a component's own complaint ("no bearer token provided", `error
// with key "slurm_job_id"`), which does not say which variable to set.
// Before the collector starts, MissingEnvironment reads the --config files,
// finds every ${env:NAME} (or ${NAME}) reference without a `:-` default
// and names each whose variable is unset, with what the file's header says
// it is. A variable set to the empty string counts as set: that is how a user
// says "leave it empty" on purpose.

// ExitIfEnvironmentMissing prints MissingEnvironment's error for args (a
// command line, program name first) to stderr and exits 1, as the collector
// exits on a configuration it refuses.
func ExitIfEnvironmentMissing(args []string) {
	exitIfMissing(args, os.LookupEnv, os.Stderr, os.Exit)
}

func exitIfMissing(args []string, lookup func(string) (string, bool), stderr io.Writer, exit func(int)) {
	if err := MissingEnvironment(args, lookup); err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		exit(1)
	}
}

// MissingEnvironment returns an error naming every environment variable that
// a --config file in args reads with no default and that lookup does not
// find, one line each: `<file> needs the environment variable NAME (<what
// the file's header says>)`. Sub-commands that read no configuration
// (components, help, completion) and --config values that are not files
// (yaml:, env:, other schemes) are not checked; a file that cannot be read
// or parsed is left to the collector, which reports it.
func MissingEnvironment(args []string, lookup func(string) (string, bool)) error {
	var errs []error
	for _, file := range configFiles(args) {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		var doc yaml.Node
		if yaml.Unmarshal(b, &doc) != nil {
			continue
		}
		docs := documentedVariables(string(b))
		for _, name := range requiredVariables(&doc) {
			if _, ok := lookup(name); ok {
				continue
			}
			msg := fmt.Sprintf("%s needs the environment variable %s", file, name)
			if what := docs[name]; what != "" {
				msg += " (" + what + ")"
			}
			errs = append(errs, errors.New(msg))
		}
	}
	return errors.Join(errs...)
}

// configFiles returns the --config values of args that name files: bare
// paths and file: URIs. It returns nothing for the sub-commands that read no
// configuration.
func configFiles(args []string) []string {
	if len(args) < 2 {
		return nil
	}
	var values []string
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "components" || a == "help" || a == "completion":
			return nil
		case a == "--config":
			if i+1 < len(rest) {
				values = append(values, rest[i+1])
				i++
			}
		case strings.HasPrefix(a, "--config="):
			values = append(values, strings.TrimPrefix(a, "--config="))
		}
	}
	var files []string
	for _, v := range values {
		if path, ok := strings.CutPrefix(v, "file:"); ok {
			files = append(files, path)
		} else if !uriScheme.MatchString(v) {
			files = append(files, v)
		}
	}
	return files
}

// uriScheme is how confmap tells a URI (yaml:..., env:...) from a path: a
// scheme of at least two characters before the colon.
var uriScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]+:`)

// requiredVariables returns, in order of first use, the variables the
// scalar values of doc read with no default. Comments are not values.
func requiredVariables(doc *yaml.Node) []string {
	var names []string
	seen := map[string]bool{}
	for _, ref := range envReferences(doc) {
		if !ref.hasDefault && !seen[ref.name] {
			seen[ref.name] = true
			names = append(names, ref.name)
		}
	}
	return names
}

// envRef is one reference to an environment variable in a value.
type envRef struct {
	name       string
	def        string // the value after ":-"
	hasDefault bool
}

// envReferences returns the env references of doc's scalar values, in order.
func envReferences(doc *yaml.Node) []envRef {
	var refs []envRef
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode {
			refs = append(refs, envReferencesIn(n.Value)...)
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(doc)
	return refs
}

// envReferencesIn returns the env references of s, found the way confmap
// finds them: the innermost `${...}` ending at each `}`, not escaped by an
// odd number of `$` before it, is an env reference when it reads
// `env:NAME[:-default]` or holds no colon at all (env is the collector's
// default scheme).
func envReferencesIn(s string) []envRef {
	var refs []envRef
	for {
		end := strings.Index(s, "}")
		if end < 0 {
			return refs
		}
		if start := strings.LastIndex(s[:end], "${"); start >= 0 && !escaped(s, start) {
			uri := s[start+2 : end]
			rest, isEnv := strings.CutPrefix(uri, "env:")
			if !isEnv && !strings.Contains(uri, ":") {
				rest, isEnv = uri, true
			}
			name, def, hasDefault := strings.Cut(rest, ":-")
			if isEnv && envName.MatchString(name) {
				refs = append(refs, envRef{name: name, def: def, hasDefault: hasDefault})
			}
		}
		s = s[end+1:]
	}
}

// escaped reports whether the `${` at s[i:] follows an odd number of `$`.
func escaped(s string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && s[j] == '$'; j-- {
		n++
	}
	return n%2 == 1
}

// envName is the collector's rule for an environment variable's name.
var envName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// documentedVariables reads a file's header, the comment lines before its
// first line of YAML: below a line starting "# Environment", each variable
// is a line `#   NAME   what it is`, and more deeply indented comment lines
// continue the one above.
func documentedVariables(text string) map[string]string {
	docs := map[string]string{}
	inEnv, last := false, ""
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "#") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			break
		}
		body := strings.TrimPrefix(line, "#")
		switch m := docEntry.FindStringSubmatch(body); {
		case strings.HasPrefix(strings.TrimSpace(body), "Environment"):
			inEnv, last = true, ""
		case !inEnv:
		case m != nil:
			last = m[1]
			docs[last] = m[2]
		case last != "" && docContinuation.MatchString(body):
			docs[last] += " " + strings.TrimSpace(body)
		default:
			inEnv, last = false, ""
		}
	}
	return docs
}

var (
	docEntry        = regexp.MustCompile(`^ {1,4}([A-Z_][A-Z0-9_]*) {2,}(\S.*)$`)
	docContinuation = regexp.MustCompile(`^ {6,}\S`)
)
