// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package config

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
}

// TestMissingEnvironmentNamesEachVariable: validate/run of gateway.yaml
// with nothing set names the three variables it has no default for, each
// with what the file's header says it is, and none of the defaulted ones.
func TestMissingEnvironmentNamesEachVariable(t *testing.T) {
	err := MissingEnvironment([]string{"otelcol-gym", "validate", "--config", "gateway.yaml"}, lookupIn(nil))
	if err == nil {
		t.Fatal("no error with nothing set")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{ // in the order the file reads them
		"gateway.yaml needs the environment variable OTELCOL_GYM_TOKEN (the bearer token every client must present; pass it by environment, never in this file; e.g. OTELCOL_GYM_TOKEN=$(openssl rand -hex 32))",
		"gateway.yaml needs the environment variable OTELCOL_GYM_TLS_CERT (the server certificate (PEM) forwarders check; e.g. /etc/otelcol-gym/gateway.crt)",
		"gateway.yaml needs the environment variable OTELCOL_GYM_TLS_KEY (its private key (PEM); e.g. /etc/otelcol-gym/gateway.key)",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("got\n%s\nwant\n%s", err, strings.Join(want, "\n"))
	}

	set := map[string]string{"OTELCOL_GYM_TLS_CERT": "c", "OTELCOL_GYM_TLS_KEY": "k", "OTELCOL_GYM_TOKEN": ""}
	if err := MissingEnvironment([]string{"otelcol-gym", "--config=file:gateway.yaml"}, lookupIn(set)); err != nil {
		t.Errorf("with every variable set (one to the empty string): %v", err)
	}
}

// TestMissingEnvironmentEveryShippedConfig: each shipped config needs
// exactly the variables it reads with no default, and the embedded default
// needs none.
func TestMissingEnvironmentEveryShippedConfig(t *testing.T) {
	for file, want := range map[string][]string{
		"standalone.yaml": nil,
		"jaeger.yaml":     nil,
		"forwarder.yaml":  {"OTELCOL_GYM_TOKEN", "OTELCOL_GYM_TLS_CA"},
		"gateway.yaml":    {"OTELCOL_GYM_TLS_CERT", "OTELCOL_GYM_TLS_KEY", "OTELCOL_GYM_TOKEN"},
		"eval-submit.yaml": {
			"GYM_OTEL_SERVICE_NAME", "GYM_OTEL_TOKEN", "GYM_USER", "GYM_RUN_ID", "SLURM_JOB_ID", "GYM_BENCHMARK",
			"GYM_CLUSTER", "GYM_MODEL", "GYM_OTEL_ENDPOINT", "GYM_JOB_DIR", "NEMO_GYM_CAPTURE_DIR",
		},
	} {
		err := MissingEnvironment([]string{"otelcol-gym", "--config", file}, lookupIn(nil))
		var got []string
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				got = append(got, regexp.MustCompile(`variable (\S+)`).FindStringSubmatch(line)[1])
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s needs %q, want %q", file, got, want)
		}
	}
	if err := MissingEnvironment(WithStandaloneDefault([]string{"otelcol-gym"}), lookupIn(nil)); err != nil {
		t.Errorf("embedded default: %v", err)
	}
}

func TestConfigFiles(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"otelcol-gym", "--config", "a.yaml"}, []string{"a.yaml"}},
		{[]string{"otelcol-gym", "validate", "--config=a.yaml", "--config", "file:/b.yaml"}, []string{"a.yaml", "/b.yaml"}},
		{[]string{"otelcol-gym", "--config=yaml:receivers: {}", "--config", "env:CFG"}, nil},
		{[]string{"otelcol-gym", "components", "--config", "a.yaml"}, nil},
		{[]string{"otelcol-gym", "--config"}, nil},
		{[]string{"otelcol-gym"}, nil},
		{nil, nil},
	} {
		if got := configFiles(tc.args); !slices.Equal(got, tc.want) {
			t.Errorf("configFiles(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestEnvReferencesIn(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []envRef
	}{
		{"${env:A}", []envRef{{name: "A"}}},
		{"${A}", []envRef{{name: "A"}}},
		{"${env:A:-127.0.0.1}:4317", []envRef{{name: "A", def: "127.0.0.1", hasDefault: true}}},
		{"${env:A:-}", []envRef{{name: "A", hasDefault: true}}},
		{"Bearer ${env:T} and ${env:U}/x", []envRef{{name: "T"}, {name: "U"}}},
		{"$${env:A}", nil},                    // escaped: the literal text ${env:A}
		{"$$${env:A}", []envRef{{name: "A"}}}, // a literal $ before a reference
		{"$${1}_$${2}", nil},
		{"${file:x.yaml}", nil},
		{"${env:not-a-name}", nil},
		{"${env:A", nil},
		{"}{ plain }", nil},
	} {
		if got := envReferencesIn(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("envReferencesIn(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// TestRequiredVariablesIgnoresComments: a reference in a comment is not one
// the collector reads.
func TestRequiredVariablesIgnoresComments(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(`# ${env:IN_COMMENT}
a: ${env:A} # ${env:TRAILING}
b: ["${env:B}", "${env:A}"]
`), &doc); err != nil {
		t.Fatal(err)
	}
	if got := requiredVariables(&doc); !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("requiredVariables = %q", got)
	}
}

func TestDocumentedVariables(t *testing.T) {
	got := documentedVariables(`# title
#   NOT_IN_BLOCK   before the block
#
# Environment (whatever follows):
#   A_B          first
#                continued
#   C            second
#
#   AFTER        not in the block any more
extensions:
#   LATE         not in the header
`)
	want := map[string]string{"A_B": "first continued", "C": "second"}
	if len(got) != len(want) || got["A_B"] != want["A_B"] || got["C"] != want["C"] {
		t.Errorf("documentedVariables = %q, want %q", got, want)
	}
}

// shippedFile is a shipped config's text and parsed document.
type shippedFile struct {
	text string
	doc  *yaml.Node
}

// shippedFiles returns each shipped config, by file name.
func shippedFiles(t *testing.T) map[string]shippedFile {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]shippedFile{}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		out[file] = shippedFile{string(b), &doc}
	}
	return out
}

// TestShippedConfigsDocumentTheirEnvironment: the header of every shipped
// config lists each variable the file reads and no other, and says
// "(default X)" exactly for those the file gives the default X.
func TestShippedConfigsDocumentTheirEnvironment(t *testing.T) {
	defaultIn := regexp.MustCompile(`\(default ([^)]*)\)`)
	for file, f := range shippedFiles(t) {
		docs := documentedVariables(f.text)
		used := map[string]bool{}
		for _, ref := range envReferences(f.doc) {
			if used[ref.name] {
				continue
			}
			used[ref.name] = true
			what, ok := docs[ref.name]
			if !ok {
				t.Errorf("%s reads %s, which its header does not list", file, ref.name)
				continue
			}
			m := defaultIn.FindStringSubmatch(what)
			switch {
			case ref.hasDefault && (m == nil || m[1] != ref.def):
				t.Errorf("%s: %s defaults to %q; its header says %q", file, ref.name, ref.def, what)
			case !ref.hasDefault && m != nil:
				t.Errorf("%s: %s has no default; its header says %q", file, ref.name, what)
			}
		}
		for name := range docs {
			if !used[name] {
				t.Errorf("%s: its header lists %s, which the file does not read", file, name)
			}
		}
	}
}

func TestExitIfMissing(t *testing.T) {
	var stderr bytes.Buffer
	code := -1
	exitIfMissing([]string{"otelcol-gym", "--config", "forwarder.yaml"}, lookupIn(map[string]string{"OTELCOL_GYM_TLS_CA": ""}),
		&stderr, func(c int) { code = c })
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if want := "Error: forwarder.yaml needs the environment variable OTELCOL_GYM_TOKEN (the bearer token the gateway expects (the gateway's OTELCOL_GYM_TOKEN))\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}

	stderr.Reset()
	code = -1
	exitIfMissing([]string{"otelcol-gym", "--config", "standalone.yaml"}, lookupIn(nil), &stderr, func(c int) { code = c })
	if code != -1 || stderr.Len() != 0 {
		t.Errorf("standalone.yaml: exit %d, stderr %q", code, stderr.String())
	}
}

// TestReadmeListsEachConfigsEnvironment: config/README.md's table of variables has
// one row for each variable each shipped config reads, with the file's
// default, or "(required)" when the file has none.
func TestReadmeListsEachConfigsEnvironment(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z-]+\\.yaml)` \\| `([A-Z_]+)` \\| ([^|]+) \\|")
	rows := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		rows[m[1]+" "+m[2]] = strings.TrimSpace(m[3])
	}
	want := map[string]string{}
	for file, f := range shippedFiles(t) {
		for _, ref := range envReferences(f.doc) {
			def := "(required)"
			if ref.hasDefault {
				def = "`" + ref.def + "`"
			}
			want[file+" "+ref.name] = def
		}
	}
	for key, def := range want {
		if got, ok := rows[key]; !ok {
			t.Errorf("config/README.md: no row for %s", key)
		} else if got != def {
			t.Errorf("config/README.md: %s has default %s, the file %s", key, got, def)
		}
	}
	for key := range rows {
		if _, ok := want[key]; !ok {
			t.Errorf("config/README.md lists %s, which that file does not read", key)
		}
	}
}
