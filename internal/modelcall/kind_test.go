// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package modelcall

import (
	"strings"
	"testing"
)

// FuzzMayHoldRoute: a URL that mayHoldRoute turns away has no path ending in
// a route, so KindOf never parses it for nothing it would find.
func FuzzMayHoldRoute(f *testing.F) {
	for _, s := range []string{
		"", "http://127.0.0.1:8001/ng-rollout/3-1/v1/responses", "http://m/v1/chat/completions?x=1",
		"http://m/v1/%72esponses", "http://m/v1/messages#/v1/responses", "/v1/responses", "mailto:x/v1/responses",
		"http://[::1]:80/run", "http://m/ng-rollout/3-1/verify", "%", "http://m/v1/responses%",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !mayHoldRoute(s) && hasRoute(urlPath(s)) {
			t.Fatalf("mayHoldRoute(%q) is false, but its path %q ends with a route", s, urlPath(s))
		}
	})
}

// TestRoutesHavePrefix: mayHoldRoute looks for the routes' common prefix,
// so a route added without it would never be found.
func TestRoutesHavePrefix(t *testing.T) {
	for _, r := range routes {
		if !strings.HasPrefix(r, routePrefix) {
			t.Errorf("route %q does not begin with %q", r, routePrefix)
		}
	}
}

// TestKindOfClient: the CLIENT spans' rule, with and without a URL worth
// parsing.
func TestKindOfClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Span
		want Kind
	}{
		{"agent to model", Span{Kind: "CLIENT", ServerType: "responses_api_agents", URLFull: "http://m/ng-rollout/1-0/v1/responses"}, Client},
		{"escaped route", Span{Kind: "CLIENT", ServerType: "responses_api_agents", URLFull: "http://m/ng-rollout/1-0/v1/%72esponses"}, Client},
		{"old URL key", Span{Kind: "CLIENT", ServerType: "responses_api_agents", HTTPURL: "http://m/ng-rollout/1-0/v1/chat/completions"}, Client},
		{"model to its LLM", Span{Kind: "CLIENT", ServerType: "responses_api_models", URLFull: "http://llm/v1/responses"}, Upstream},
		{"no server type, no prefix", Span{Kind: "CLIENT", URLFull: "http://llm/v1/responses"}, Upstream},
		{"agent to itself", Span{Kind: "CLIENT", ServerType: "responses_api_agents", URLFull: "http://a/ng-rollout/1-0/v1/responses", CalleeType: "responses_api_agents"}, NotModelCall},
		{"tool call", Span{Kind: "CLIENT", ServerType: "responses_api_agents", URLFull: "http://r/ng-rollout/1-0/get_weather"}, NotModelCall},
		{"route in the query only", Span{Kind: "CLIENT", ServerType: "responses_api_agents", URLFull: "http://r/verify?next=/v1/responses"}, NotModelCall},
		{"route in the fragment only", Span{Kind: "CLIENT", ServerType: "responses_api_agents", URLFull: "http://r/verify#/v1/responses"}, NotModelCall},
		{"unparsable", Span{Kind: "CLIENT", ServerType: "responses_api_agents", URLFull: "http://r:port/v1/responses"}, NotModelCall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := KindOf(&tc.s); got != tc.want {
				t.Fatalf("KindOf = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestCandidate: a span that is no candidate is no model call whatever its
// attributes say, and each kind's spans are candidates.
func TestCandidate(t *testing.T) {
	route := "/ng-rollout/1-0/v1/responses"
	for _, tc := range []struct {
		s         Span
		candidate bool
	}{
		{Span{Name: "gym.model.responses", Kind: "INTERNAL"}, true},
		{Span{Name: "POST", Kind: "SERVER", ServerType: "responses_api_models", URLPath: route}, true},
		{Span{Name: "POST", Kind: "CLIENT", ServerType: "responses_api_agents", URLFull: "http://m" + route}, true},
		{Span{Name: "POST", Kind: "SERVER", ServerType: "responses_api_agents", URLPath: route}, false},
		{Span{Name: "POST", Kind: "SERVER", URLPath: route}, false},
		{Span{Name: "POST /v1/responses", Kind: "INTERNAL", ServerType: "responses_api_models", URLPath: route}, false},
	} {
		if got := Candidate(tc.s.Name, tc.s.Kind, tc.s.ServerType); got != tc.candidate {
			t.Errorf("Candidate(%q, %q, %q) = %v, want %v", tc.s.Name, tc.s.Kind, tc.s.ServerType, got, tc.candidate)
		}
		if !tc.candidate && KindOf(&tc.s) != NotModelCall {
			t.Errorf("KindOf(%+v) = %d for a span that is no candidate", tc.s, KindOf(&tc.s))
		}
		if tc.candidate && KindOf(&tc.s) == NotModelCall {
			t.Errorf("KindOf(%+v) is no model call", tc.s)
		}
	}
}

func TestToolName(t *testing.T) {
	for url, want := range map[string]string{
		"http://127.0.0.1:9003/get_weather":                 "get_weather",
		"http://127.0.0.1:9003/ng-rollout/0-0/get_weather":  "get_weather",
		"http://127.0.0.1:9003/ng-rollout/0-0/verify":       "",
		"http://127.0.0.1:9003/seed_session":                "",
		"http://127.0.0.1:9001/ng-rollout/0-0/v1/responses": "",
		"http://127.0.0.1:9001/v1/chat/completions":         "",
		"http://127.0.0.1:9003/":                            "",
		"http://127.0.0.1:9003/%3Cscript%3E":                "",
		"http://127.0.0.1:9003/search.v2?q=1":               "search.v2",
		"::not a url":                                       "",
	} {
		if got := ToolName(Span{Kind: "CLIENT", URLFull: url}); got != want {
			t.Errorf("ToolName(%q) = %q, want %q", url, got, want)
		}
	}
	if got := ToolName(Span{Kind: "SERVER", URLFull: "http://h/get_weather"}); got != "" {
		t.Errorf("a SERVER span calls no tool, got %q", got)
	}
	if got := ToolName(Span{Kind: "CLIENT", HTTPURL: "http://h/get_weather"}); got != "get_weather" {
		t.Errorf("http.url: got %q", got)
	}
}

func TestProvider(t *testing.T) {
	for url, want := range map[string]string{
		"https://api.openai.com/v1/responses":                                            "openai",
		"https://myres.openai.azure.com/openai/deployments/x/chat/completions":           "azure.ai.openai",
		"https://api.anthropic.com:443/v1/messages":                                      "anthropic",
		"https://bedrock-runtime.us-east-1.amazonaws.com/model/x/converse":               "aws.bedrock",
		"https://s3.us-east-1.amazonaws.com/x":                                           "",
		"https://us-central1-aiplatform.googleapis.com/v1/projects/p":                    "gcp.vertex_ai",
		"https://generativelanguage.googleapis.com/v1beta/models/gemini:generateContent": "gcp.gemini",
		"http://127.0.0.1:8000/v1/responses":                                             "",
		"http://user@API.OPENAI.COM/v1/responses":                                        "openai",
		"http://notapi.openai.com.evil.example/v1/responses":                             "",
		"": "",
	} {
		if got := Provider(Span{URLFull: url}); got != want {
			t.Errorf("Provider(%q) = %q, want %q", url, got, want)
		}
	}
}

// plainPath reads what url.Parse reads of a URL's path.
func TestPlainPath(t *testing.T) {
	for _, u := range []string{
		"http://127.0.0.1:9003/get_weather", "http://h/ng-rollout/0-0/get_weather?x=1#f", "http://h", "http://h?q", "http://h#f",
		"https://user:pw@h:1/a/b/", "/a/b?c", "a/b", "http://h/a%2Fb", "http://h/a b", "mailto:x@y", "urn:a:b", "//h/p", "http:/p",
		"http://[::1]:80/v1/x", "", "?q", "#f", "http://h/a#b?c", "HTTP://H/X",
	} {
		if got, want := plainPath(u), urlPath(u); got != want {
			t.Errorf("plainPath(%q) = %q, url.Parse's path %q", u, got, want)
		}
	}
}

func FuzzPlainPath(f *testing.F) {
	for _, u := range []string{
		"http://h/a", "http://h/a?b#c", "/p", "x:y", "//h/p",
		"http://127.0.0.1:8001/ng-rollout/3-1/v1/responses", "https://m/v1/chat/completions?x=1#f",
		"http://m", "http://m?q/a", "http://m#/a", "http://m:80a/", "http://[::1]:80/run", "http://m/a b",
		"http://m/a%20b", "http://m/\x7f", "https://user@m/a", "http://m/a?b=%zz", "http://m/a#b?c", "http://m//a",
		"http://m/caf\xc3\xa9", "HTTP://m/a", "http://:80/a",
	} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, u string) {
		if got, want := plainPath(u), urlPath(u); got != want {
			t.Fatalf("plainPath(%q) = %q, url.Parse's path %q", u, got, want)
		}
	})
}

func TestServerRequest(t *testing.T) {
	for _, c := range []struct {
		s    Span
		want bool
	}{
		{Span{Kind: "SERVER"}, true},
		{Span{Kind: "INTERNAL", URLPath: "/run"}, true},
		{Span{Kind: "INTERNAL", HTTPTarget: "/run?x"}, true},
		{Span{Kind: "INTERNAL", HTTPRoute: "/run"}, false},
		{Span{Kind: "INTERNAL"}, false},
		{Span{Kind: "CLIENT", URLPath: "/run"}, false},
	} {
		if got := ServerRequest(&c.s); got != c.want {
			t.Errorf("ServerRequest(%+v) = %v, want %v", c.s, got, c.want)
		}
	}
}
