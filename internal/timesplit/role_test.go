// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package timesplit

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// TestRoleOf: the spans of a rollout in both telemetry modes, as Gym and
// its instrumentation send them (names, kinds and URLs from
// testdata/real_gym_*), and what each is to the split.
func TestRoleOf(t *testing.T) {
	const (
		agent     = "responses_api_agents"
		model     = "responses_api_models"
		resources = "resources_servers"
		env       = "environment_servers"
	)
	server := func(name, serverType, target string) Info {
		return Info{Span: modelcall.Span{Name: name, Kind: "SERVER", ServerType: serverType, HTTPTarget: target, Service: "svc"}}
	}
	client := func(serverType, url, service, peer, callee string) Info {
		return Info{Span: modelcall.Span{Name: "HTTP POST", Kind: "CLIENT", ServerType: serverType, URLFull: url,
			Service: service, PeerService: peer, CalleeType: callee}}
	}
	internal := func(name string) Info { return Info{Span: modelcall.Span{Name: name}} }
	for _, tc := range []struct {
		name string
		s    Info
		want Role
	}{
		// Gym's own spans (nemo.gym.server.type on every process).
		{"env_server_run", server("POST /run", env, "/run"), Plain},
		{"agent_run", server("POST /run", agent, "/run"), AgentRun},
		{"gym_rollout", internal("gym.rollout"), Rollout},
		{"agent_to_model", client(agent, "http://127.0.0.1:11668/ng-rollout/0-0/v1/responses", "a", "m", model), ModelCall},
		{"agent_to_itself", client(agent, "http://127.0.0.1:16568/ng-rollout/0-0/v1/responses", "a", "a", agent), Plain},
		{"agent_self_server", server("POST /ng-rollout/{rollout_id}/v1/responses", agent, "/ng-rollout/0-0/v1/responses"), Plain},
		{"model_server", server("POST", model, "/ng-rollout/0-0/v1/responses"), ModelCall},
		{"gym_model", internal("gym.model.responses"), ModelCall},
		{"model_to_llm", client(model, "http://127.0.0.1:43299/v1/responses", "m", "127.0.0.1:43299", ""), ModelCall},
		{"agent_to_tool", client(agent, "http://127.0.0.1:17128/get_weather", "a", "r", resources), ToolCall},
		{"agent_to_seed", client(agent, "http://127.0.0.1:17128/ng-rollout/0-0/seed_session", "a", "r", resources), ToolCall},
		{"tool_server", server("POST /get_weather", resources, "/get_weather"), ToolCall},
		{"agent_to_verify", client(agent, "http://127.0.0.1:17128/ng-rollout/0-0/verify", "a", "r", resources), VerifyCall},
		{"verify_server", server("POST", resources, "/ng-rollout/0-0/verify?x=1"), VerifyCall},
		{"gym_verify", internal("gym.verify"), VerifyCall},
		{"gym_tool_call", internal("gym.tool_call"), ToolCall},
		{"gym_sandbox", internal("gym.sandbox.exec"), ToolCall},
		{"env_to_agent", client(env, "http://127.0.0.1:16568/run", "e", "a", agent), Plain},
		{"agent_responses", internal("gym.agent.responses"), Plain},
		{"asgi_event", Info{Span: modelcall.Span{Name: "POST /run http receive"}, ASGIEvent: true}, Event},
		{"asgi_event_by_name", Info{Span: modelcall.Span{Name: "POST /ng-rollout/{rollout_id}/v1/responses http send"}}, Event},
		{"server_named_like_an_event", Info{Span: modelcall.Span{Name: "POST http send", Kind: "SERVER", ServerType: resources, HTTPTarget: "/x"}}, ToolCall},

		// Generic FastAPI/aiohttp spans (no server types).
		{"generic_wrapper_run", server("POST /run", "", "/run"), Run},
		{"generic_orchestrator_call", client("", "http://127.0.0.1:13195/run", "o", "l", ""), Plain},
		{"generic_agent_to_model", client("", "http://127.0.0.1:10646/ng-rollout/0-0/v1/responses", "a", "m", ""), ModelCall},
		{"generic_agent_to_itself", client("", "http://127.0.0.1:12101/ng-rollout/0-0/v1/responses", "a", "a", ""), Plain},
		{"generic_model_to_llm", client("", "http://127.0.0.1:46017/v1/responses", "m", "127.0.0.1:46017", ""), ModelCall},
		{"generic_agent_to_tool", client("", "http://127.0.0.1:18100/get_weather", "a", "r", ""), ToolCall},
		{"generic_agent_to_verify", client("", "http://127.0.0.1:18100/ng-rollout/0-0/verify", "a", "r", ""), VerifyCall},
		{"generic_model_server", server("POST", "", "/ng-rollout/0-0/v1/responses"), Plain},
		{"generic_tool_server", server("POST /get_weather", "", "/get_weather"), ToolCall},
		{"generic_seed_server", server("POST", "", "/ng-rollout/0-0/seed_session"), ToolCall},
		{"generic_leaked_run", Info{Span: modelcall.Span{Name: "POST /run", HTTPTarget: "/run"}}, Run},
		{"client_without_url", client(agent, "", "a", "", ""), Plain},
		{"server_route_template_only", Info{Span: modelcall.Span{Name: "POST /run", Kind: "SERVER", ServerType: agent, HTTPRoute: "/run"}}, AgentRun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, RoleOf(tc.s))
		})
	}
}

func TestPathOfAndRoute(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:1/ng-rollout/0-0/verify?x#y":  "/verify",
		"https://h/run":                         "/run",
		"http://h":                              "",
		"/ng-rollout/0-0":                       "",
		"/ng-rollout/{rollout_id}/v1/responses": "/v1/responses",
		"/a/b?q=1":                              "/a/b",
		"/a/b#f?q":                              "/a/b",
		"":                                      "",
	} {
		assert.Equal(t, want, route(pathOf(in)), in)
	}
}
