// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymconv

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	oldconventions "go.opentelemetry.io/otel/semconv/v1.12.0"
	conventions "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// definedNames are the names that have one definition: Gym's here, in
// gymconv; OpenTelemetry's in semconv.
var definedNames = map[string]string{
	RolloutAttribute:         "gymconv.RolloutAttribute",
	SpanRunAttribute:         "gymconv.SpanRunAttribute",
	RolloutRootAttribute:     "gymconv.RolloutRootAttribute",
	OriginalTraceAttribute:   "gymconv.OriginalTraceAttribute",
	RolloutSpanName:          "gymconv.RolloutSpanName",
	JobSpanName:              "gymconv.JobSpanName",
	RunAttribute:             "gymconv.RunAttribute",
	ServiceOverrideAttribute: "gymconv.ServiceOverrideAttribute",
	RoutingServiceAttribute:  "gymconv.RoutingServiceAttribute",
	ServerTypeAttribute:      "gymconv.ServerTypeAttribute",
	ServerTypeAgent:          "gymconv.ServerTypeAgent",
	ServerTypeModel:          "gymconv.ServerTypeModel",
	ServerTypeResources:      "gymconv.ServerTypeResources",
	ServerTypeEnvironment:    "gymconv.ServerTypeEnvironment",
	URLPrefix:                "gymconv.URLPrefix",
	"/" + URLPrefix + "/":    "gymconv.URLPrefix",
	RolloutIDPattern:         "gymconv.RolloutIDPattern",

	string(conventions.ServiceNameKey):            "conventions.ServiceNameKey",
	string(conventions.PeerServiceKey):            "conventions.PeerServiceKey",
	string(conventions.URLFullKey):                "conventions.URLFullKey",
	string(conventions.URLPathKey):                "conventions.URLPathKey",
	string(conventions.ServerAddressKey):          "conventions.ServerAddressKey",
	string(conventions.ServerPortKey):             "conventions.ServerPortKey",
	string(conventions.HTTPRequestMethodKey):      "conventions.HTTPRequestMethodKey",
	string(conventions.HTTPResponseStatusCodeKey): "conventions.HTTPResponseStatusCodeKey",
	string(conventions.HTTPRouteKey):              "conventions.HTTPRouteKey",
	string(conventions.HostNameKey):               "conventions.HostNameKey",
	string(oldconventions.HTTPTargetKey):          "oldconventions.HTTPTargetKey",
	string(oldconventions.HTTPURLKey):             "oldconventions.HTTPURLKey",
	string(oldconventions.HTTPMethodKey):          "oldconventions.HTTPMethodKey",
	string(oldconventions.HTTPStatusCodeKey):      "oldconventions.HTTPStatusCodeKey",
	string(oldconventions.NetPeerNameKey):         "oldconventions.NetPeerNameKey",
	string(oldconventions.NetPeerPortKey):         "oldconventions.NetPeerPortKey",
	string(oldconventions.NetHostNameKey):         "oldconventions.NetHostNameKey",
	string(oldconventions.NetHostPortKey):         "oldconventions.NetHostPortKey",
	string(oldconventions.HTTPHostKey):            "oldconventions.HTTPHostKey",
}

// fixturePackages hold test data written as Gym and its instrumentation
// write it (spelled out, so a test does not take its expectations from the
// code it tests); they are imported only by tests.
var fixturePackages = []string{
	"internal/gymconv",
	"internal/gymtest",
	"internal/gymview/gymviewtest",
	"internal/tools",
}

// TestNamesHaveOneDefinition parses every non-test Go file of the module
// outside gymconv, the fixtures and generated code, and fails on a string
// literal that is one of the names above: such a literal is a copy. Struct
// tags (the JSON field names of a decoded line) and comments are not
// literals of the code and are not checked.
func TestNamesHaveOneDefinition(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			for _, p := range fixturePackages {
				if rel == filepath.FromSlash(p) {
					return filepath.SkipDir
				}
			}
			if (rel != "." && strings.HasPrefix(d.Name(), ".")) || d.Name() == "testdata" || rel == filepath.Join("cmd", "otelcol-gym") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasPrefix(d.Name(), "generated_") {
			return nil
		}
		checkFile(t, path, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func checkFile(t *testing.T, path, rel string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	tags := map[*ast.BasicLit]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if field, ok := n.(*ast.Field); ok && field.Tag != nil {
			tags[field.Tag] = true
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING || tags[lit] {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return true
		}
		if def, ok := definedNames[s]; ok {
			t.Errorf("%s:%d: %q is a copy of %s", rel, fset.Position(lit.Pos()).Line, s, def)
		}
		return true
	})
}
