// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// A rollout in the GenAI agent conventions (design §4.7): its agent span
// is invoke_agent, each call of a tool the model asked for is execute_tool,
// and the rollout is the conversation. Nothing here waits.
//
// The agent span is gym.rollout, else the agent server's POST /run SERVER
// span (INTERNAL when its handler got a leaked context; an agent:
// nemo.gym.server.type responses_api_agents, or, for
// senders without it, a service seen making model calls; an environment
// server's /run above it is none). The first of them to come is marked, once
// per rollout: gym.rollout leaves the gym processor as it arrives (it has
// the rollout id), POST /run a settle later (its rollout is found upward),
// and a child ends, and is exported, before its parent.
//
// A tool call is the agent's CLIENT span to a route (modelcall.ToolName)
// that names a tool the model asked for in the rollout's capture lines (a
// function call not yet taken, in the order the lines were written, which
// gives gen_ai.tool.call.id), or, without such a call, whose callee is a
// resources server.

// agentServices are the services seen making model calls: the agents, for
// senders without nemo.gym.server.type.
type agentServices map[string]bool

func (a agentServices) learn(service string) {
	if service != "" && !a[service] && len(a) < maxServices {
		a[service] = true
	}
}

// markRollout marks span, which is no model call, when it is its rollout's
// agent span or a tool call; with content on, the rollout's agent span and
// root span get its task and final answer (content.go).
func (p *captureProcessor) markRollout(span ptrace.Span, s *modelcall.Span, res pcommon.Map, c *counts) {
	agent := false
	if span.Kind() == ptrace.SpanKindClient {
		p.markTool(span, s, c)
	} else {
		agent = p.markAgent(span, s, res)
	}
	if !p.cfg.CaptureMessageContent || (!agent && !rolloutRoot(span)) {
		return
	}
	if r := p.rolloutOf(span.Attributes()); r != nil {
		p.read(r, false, c)
		putRolloutContent(span.Attributes(), r, agent)
	}
}

// rolloutRoot reports whether the gym processor marked span its rollout's
// root (the root of the rollout's own trace).
func rolloutRoot(span ptrace.Span) bool {
	v, ok := span.Attributes().Get(gymconv.RolloutRootAttribute)
	return ok && v.Type() == pcommon.ValueTypeBool && v.Bool()
}

// markAgent marks span, not a CLIENT span, when it is its rollout's agent
// span (the first to come): reports whether it did.
func (p *captureProcessor) markAgent(span ptrace.Span, s *modelcall.Span, res pcommon.Map) bool {
	if span.Kind() == ptrace.SpanKindServer {
		if !p.agentRun(s) {
			return false
		}
	} else if s.Name != gymconv.RolloutSpanName && !p.leakedAgentRun(span, s) {
		return false
	}
	attrs := span.Attributes()
	r := p.rolloutOf(attrs)
	if r == nil || r.agentMarked {
		return false
	}
	r.agentMarked = true
	name := stringAttr(attrs, gymconv.ServerNameAttribute)
	if name == "" {
		name = stringAttr(res, gymconv.ServerNameAttribute)
	}
	if name == "" {
		name = s.Service[strings.LastIndexByte(s.Service, '/')+1:]
	}
	annotateAgent(attrs, modelcall.Bound(name), r.id)
	return true
}

// agentRun reports whether s, a server's request, is an agent's POST /run.
func (p *captureProcessor) agentRun(s *modelcall.Span) bool {
	agent := s.ServerType == gymconv.ServerTypeAgent || (s.ServerType == "" && p.agents[s.Service])
	return agent && strings.HasSuffix(s.Name, " /run")
}

// leakedAgentRun reports whether span, INTERNAL, is an agent's POST /run
// whose handler got a leaked context (modelcall.ServerRequest).
func (p *captureProcessor) leakedAgentRun(span ptrace.Span, s *modelcall.Span) bool {
	if !p.agentRun(s) {
		return false
	}
	modelcall.ReadAttributes(span.Attributes(), s)
	return modelcall.ServerRequest(s)
}

// rolloutOf is the state of the rollout a span's attributes name; nil when
// they name none that may name a file.
func (p *captureProcessor) rolloutOf(attrs pcommon.Map) *rolloutState {
	if id := stringAttr(attrs, p.cfg.RolloutAttribute); gymconv.SafeFileID(id) {
		return p.rollout(id)
	}
	return nil
}

// markTool marks a CLIENT span that calls a tool.
func (p *captureProcessor) markTool(span ptrace.Span, s *modelcall.Span, c *counts) {
	name := modelcall.ToolName(*s)
	if name == "" {
		return
	}
	attrs := span.Attributes()
	r := p.rolloutOf(attrs)
	if r == nil {
		return
	}
	p.read(r, false, c)
	callID, asked := r.takeToolCall(name)
	if !asked && p.services[s.PeerService] != gymconv.ServerTypeResources {
		return
	}
	annotateTool(attrs, name, callID, r.id)
}

// takeToolCall takes the first function call of the rollout's capture lines
// named name that no tool span has taken: its call id, and whether there
// was one.
func (r *rolloutState) takeToolCall(name string) (string, bool) {
	for _, l := range r.lines {
		for i, tc := range l.line.ToolCalls {
			if tc.Name == name && l.toolsTaken&(1<<i) == 0 {
				l.toolsTaken |= 1 << i
				return tc.CallID, true
			}
		}
	}
	return "", false
}
