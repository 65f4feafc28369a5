// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import "testing"

func TestSpanLabel(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys spanKeys
		want string
	}{
		{"POST", spanKeys{HTTPTarget: "/ng-rollout/4-0/v1/responses"}, "POST /v1/responses"},
		{"POST", spanKeys{URLPath: "/ng-rollout/4-0/verify", URLFull: "http://127.0.0.1:8002/ng-rollout/4-0/verify"}, "POST /verify"},
		{"POST", spanKeys{URLFull: "http://127.0.0.1:8002/ng-rollout/4-0/get_weather?x=1"}, "POST /get_weather"},
		{"POST", spanKeys{HTTPRoute: "/run", HTTPTarget: "/run"}, "POST /run"},
		{"POST", spanKeys{HTTPTarget: "/ng-rollout/4-0"}, "POST /"},
		{"POST", spanKeys{}, ""},                        // nothing to add
		{"POST", spanKeys{HTTPTarget: 7}, ""},           // not a string
		{"POST", spanKeys{URLFull: "not a url"}, ""},    // no path
		{"POST /run", spanKeys{HTTPRoute: "/run"}, ""},  // named already
		{"gym.rollout", spanKeys{HTTPTarget: "/x"}, ""}, // not a method
		{"GET", spanKeys{HTTPTarget: "/global_config_dict_yaml"}, "GET /global_config_dict_yaml"},
	} {
		if got := spanLabel(&viewSpan{Name: tc.name, attrs: tc.keys}); got != tc.want {
			t.Errorf("spanLabel(%q, %+v) = %q, want %q", tc.name, tc.keys, got, tc.want)
		}
	}
}

func TestIsASGIEvent(t *testing.T) {
	if !isASGIEvent(spanKeys{ASGIEventType: "http.request"}) {
		t.Error("a span with asgi.event.type is an ASGI event")
	}
	if isASGIEvent(spanKeys{HTTPRoute: "/run"}) {
		t.Error("a server span is not")
	}
}
