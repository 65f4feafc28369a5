// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package modelcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The model's messages of a capture line in the GenAI conventions' JSON
// (gen_ai.input.messages, gen_ai.output.messages,
// gen_ai.system_instructions; semconv v1.41.0's schemas): read only when a
// user opts in to content (design §4.7), from the request and response
// bodies of the line's dialect:
//
//	responses  request.instructions (system), request.input (a string, or
//	           items: messages, function_call, function_call_output,
//	           reasoning); response.output
//	chat       request.messages; response.choices[].message
//	messages   request.system (system), request.messages; response.content
//
// A message is {"role", "parts": [...]} with parts of the conventions'
// types: text, reasoning, tool_call {id, name, arguments},
// tool_call_response {id, response}; an output message has finish_reason.
// Roles are the conventions' four (developer is system). A tool call's
// arguments and a tool's response are JSON values when their string is
// JSON. Each attribute is bounded (boundMessages).

// TruncatedMarker ends every string cut to keep a content attribute within
// its bound, and names the messages dropped past it.
const TruncatedMarker = "…[truncated by otelcol-gym]"

// Content is the model's messages of one capture line, as attribute values
// ("" when the line has none of that kind).
type Content struct {
	Input, Output, System string
	// Task is the text of the first user message (the rollout's task when
	// the line is its first), Answer the text of the last output text part.
	Task, Answer string
}

// message and part are the conventions' shapes; a part is a map so that
// each type carries exactly its own keys.
type message struct {
	Role         string           `json:"role"`
	Parts        []map[string]any `json:"parts"`
	FinishReason string           `json:"finish_reason,omitempty"`
}

// ParseContent reads the messages of a capture line; drop names the keys of
// JSON objects (tool arguments and responses) that carry credentials, which
// are removed (the credentials rule, design §6); every attribute is bounded
// to maxBytes (boundMessages). A line whose bodies cannot be read gives none.
func ParseContent(line []byte, drop func(key string) bool, maxBytes int) Content {
	var l struct {
		Dialect  string         `json:"dialect"`
		Request  map[string]any `json:"request"`
		Response map[string]any `json:"response"`
	}
	if json.Unmarshal(line, &l) != nil {
		return Content{}
	}
	var in, out []message
	var system []map[string]any
	switch l.Dialect {
	case "chat":
		in = chatMessages(l.Request["messages"])
		for _, c := range asSlice(l.Response["choices"]) {
			cm, _ := c.(map[string]any)
			if m, ok := chatMessage(cm["message"]); ok {
				m.FinishReason = finishReason(str(cm["finish_reason"]), m.Parts)
				out = append(out, m)
			}
		}
	case "messages":
		system = textParts(l.Request["system"])
		in = anthropicMessages(l.Request["messages"])
		if parts := anthropicParts(l.Response["content"]); len(parts) > 0 {
			out = []message{{Role: "assistant", Parts: parts, FinishReason: finishReason(str(l.Response["stop_reason"]), parts)}}
		}
	default: // responses, the dialect of Gym's agents
		system = textParts(l.Request["instructions"])
		in = responsesItems(l.Request["input"], "user")
		if parts := flatten(responsesItems(l.Response["output"], "assistant")); len(parts) > 0 {
			reason := "stop"
			if d, ok := l.Response["incomplete_details"].(map[string]any); ok && str(d["reason"]) != "" {
				reason = "length"
			}
			out = []message{{Role: "assistant", Parts: parts, FinishReason: finishReason(reason, parts)}}
		}
	}
	for _, m := range append(in, out...) {
		for _, p := range m.Parts {
			redact(p, drop)
		}
	}
	c := Content{Task: firstText(in, "user"), Answer: lastText(out)}
	c.Input = boundMessages(in, maxBytes)
	c.Output = boundMessages(out, maxBytes)
	if len(system) > 0 {
		c.System = boundParts(system, maxBytes)
	}
	c.Task, c.Answer = cut(c.Task, maxBytes), cut(c.Answer, maxBytes)
	return c
}

// responsesItems reads the responses dialect's input or output: a string is
// one message of role def; consecutive items of one role are kept apart
// (each item its message), as the dialect lists them.
func responsesItems(v any, def string) []message {
	if s, ok := v.(string); ok {
		return []message{{Role: def, Parts: []map[string]any{textPart(s)}}}
	}
	var ms []message
	for _, it := range asSlice(v) {
		item, ok := it.(map[string]any)
		if !ok {
			continue
		}
		switch str(item["type"]) {
		case "function_call":
			ms = append(ms, message{Role: "assistant", Parts: []map[string]any{toolCall(item["call_id"], item["name"], item["arguments"])}})
		case "function_call_output":
			ms = append(ms, message{Role: "tool", Parts: []map[string]any{toolResponse(item["call_id"], item["output"])}})
		case "reasoning":
			var parts []map[string]any
			for _, s := range asSlice(item["summary"]) {
				if t := str(asMap(s)["text"]); t != "" {
					parts = append(parts, map[string]any{"type": "reasoning", "content": t})
				}
			}
			if len(parts) > 0 {
				ms = append(ms, message{Role: "assistant", Parts: parts})
			}
		default: // a message, with or without type
			role := role(str(item["role"]), def)
			if parts := textParts(item["content"]); len(parts) > 0 {
				ms = append(ms, message{Role: role, Parts: parts})
			}
		}
	}
	return ms
}

func chatMessages(v any) []message {
	var ms []message
	for _, it := range asSlice(v) {
		if m, ok := chatMessage(it); ok {
			ms = append(ms, m)
		}
	}
	return ms
}

// chatMessage reads one chat-dialect message: content, tool_calls, and a
// tool's answer (role tool, tool_call_id).
func chatMessage(v any) (message, bool) {
	item, ok := v.(map[string]any)
	if !ok {
		return message{}, false
	}
	m := message{Role: role(str(item["role"]), "user")}
	if m.Role == "tool" {
		m.Parts = []map[string]any{toolResponse(item["tool_call_id"], item["content"])}
		return m, true
	}
	m.Parts = textParts(item["content"])
	for _, tc := range asSlice(item["tool_calls"]) {
		f := asMap(asMap(tc)["function"])
		m.Parts = append(m.Parts, toolCall(asMap(tc)["id"], f["name"], f["arguments"]))
	}
	return m, len(m.Parts) > 0
}

func anthropicMessages(v any) []message {
	var ms []message
	for _, it := range asSlice(v) {
		item := asMap(it)
		if parts := anthropicParts(item["content"]); len(parts) > 0 {
			r := role(str(item["role"]), "user")
			if r == "user" && parts[0]["type"] == "tool_call_response" {
				r = "tool"
			}
			ms = append(ms, message{Role: r, Parts: parts})
		}
	}
	return ms
}

// anthropicParts reads the messages dialect's content: a string, or blocks
// of type text, thinking, tool_use and tool_result.
func anthropicParts(v any) []map[string]any {
	if s, ok := v.(string); ok {
		return []map[string]any{textPart(s)}
	}
	var parts []map[string]any
	for _, b := range asSlice(v) {
		block := asMap(b)
		switch str(block["type"]) {
		case "text":
			parts = append(parts, textPart(str(block["text"])))
		case "thinking":
			parts = append(parts, map[string]any{"type": "reasoning", "content": str(block["thinking"])})
		case "tool_use":
			parts = append(parts, toolCall(block["id"], block["name"], block["input"]))
		case "tool_result":
			parts = append(parts, toolResponse(block["tool_use_id"], block["content"]))
		}
	}
	return parts
}

// textParts reads content that is a string or a list of parts with text
// (input_text, output_text, text; a plain string item too).
func textParts(v any) []map[string]any {
	if s, ok := v.(string); ok {
		if s == "" {
			return nil
		}
		return []map[string]any{textPart(s)}
	}
	var parts []map[string]any
	for _, p := range asSlice(v) {
		if s, ok := p.(string); ok {
			parts = append(parts, textPart(s))
			continue
		}
		pm := asMap(p)
		switch t := str(pm["type"]); {
		case t == "refusal":
			parts = append(parts, textPart(str(pm["refusal"])))
		case pm["text"] != nil:
			parts = append(parts, textPart(str(pm["text"])))
		}
	}
	return parts
}

func textPart(s string) map[string]any { return map[string]any{"type": "text", "content": s} }

func toolCall(id, name, args any) map[string]any {
	p := map[string]any{"type": "tool_call", "name": str(name)}
	if s := str(id); s != "" {
		p["id"] = s
	}
	if args != nil {
		p["arguments"] = jsonValue(args)
	}
	return p
}

func toolResponse(id, response any) map[string]any {
	p := map[string]any{"type": "tool_call_response", "response": jsonValue(response)}
	if s := str(id); s != "" {
		p["id"] = s
	}
	return p
}

// jsonValue is v, or the JSON value a string holds.
func jsonValue(v any) any {
	if s, ok := v.(string); ok {
		var x any
		if t := strings.TrimSpace(s); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Unmarshal([]byte(t), &x) == nil {
			return x
		}
	}
	return v
}

// role is the conventions' role of a dialect's role (developer is system);
// def when absent.
func role(r, def string) string {
	switch r {
	case "system", "user", "assistant", "tool":
		return r
	case "developer":
		return "system"
	case "":
		return def
	}
	return Bound(r)
}

// finishReason is the conventions' finish reason: tool_call when the model
// asked for a tool, else the dialect's (end_turn, completed: stop).
func finishReason(r string, parts []map[string]any) string {
	for _, p := range parts {
		if p["type"] == "tool_call" {
			return "tool_call"
		}
	}
	switch r {
	case "", "stop", "end_turn", "stop_sequence", "completed":
		return "stop"
	case "max_tokens", "max_output_tokens", "length":
		return "length"
	case "tool_calls", "tool_use":
		return "tool_call"
	}
	return Bound(r)
}

// redact removes, in a part's tool arguments and responses, the keys of
// objects (at any depth) that carry credentials.
func redact(p map[string]any, drop func(string) bool) {
	if drop == nil {
		return
	}
	for _, k := range []string{"arguments", "response"} {
		if v, ok := p[k]; ok {
			redactValue(v, drop)
		}
	}
}

func redactValue(v any, drop func(string) bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if drop(k) {
				delete(x, k)
				continue
			}
			redactValue(e, drop)
		}
	case []any:
		for _, e := range x {
			redactValue(e, drop)
		}
	}
}

// boundMessages is ms as JSON within maxBytes: strings are cut, the longest
// first, each ending in TruncatedMarker; when the messages do not fit even
// so, the last are dropped and a message of the first dropped one's role
// says how many. "" for no messages.
func boundMessages(ms []message, maxBytes int) string {
	if len(ms) == 0 {
		return ""
	}
	if b := encode(ms); len(b) <= maxBytes {
		return string(b)
	}
	// No string longer than the bound can stay whole: cut them first, so
	// the search below encodes little.
	ms = clone(ms)
	walkStrings(ms, func(s *string) { *s = cut(*s, maxBytes) })
	withNote := func(keep int) []message {
		cand := ms[:keep:keep]
		if keep < len(ms) {
			note := fmt.Sprintf("%s %d more messages", TruncatedMarker, len(ms)-keep)
			cand = append(cand, message{Role: ms[keep].Role, Parts: []map[string]any{textPart(note)}})
		}
		return cand
	}
	// The most messages that fit with their strings cut to nothing
	// (fitting is monotone in their number), then their strings as long as
	// the bound lets them be.
	lo, hi := 0, len(ms)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if _, ok := fit(withNote(mid), maxBytes, true); ok {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 {
		return ""
	}
	s, _ := fit(withNote(lo), maxBytes, false)
	return s
}

// boundParts is parts (the system instructions) as JSON within maxBytes,
// cut as boundMessages cuts.
func boundParts(parts []map[string]any, maxBytes int) string {
	b := encodeAny(parts)
	if len(b) <= maxBytes {
		return string(b)
	}
	wrapped := []message{{Parts: parts}}
	s, ok := fit(wrapped, maxBytes+len(encode(wrapped))-len(b), false)
	var m []message
	if !ok || json.Unmarshal([]byte(s), &m) != nil || len(m) != 1 {
		return ""
	}
	return string(encodeAny(m[0].Parts))
}

// fit cuts the strings of ms to the longest common length that makes their
// JSON fit in maxBytes (a binary search over that length); false when even
// empty strings do not fit (only that is tried when probe). A note of
// boundMessages (it begins with TruncatedMarker) is never cut.
func fit(ms []message, maxBytes int, probe bool) (string, bool) {
	longest := 0
	walkStrings(ms, func(s *string) { longest = max(longest, len(*s)) })
	try := func(n int) []byte {
		cp := clone(ms)
		walkStrings(cp, func(s *string) {
			if !strings.HasPrefix(*s, TruncatedMarker) {
				*s = cut(*s, n)
			}
		})
		return encode(cp)
	}
	if b := try(0); len(b) > maxBytes || probe {
		return string(b), len(b) <= maxBytes
	}
	lo, hi := 0, longest // try(lo) fits
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(try(mid)) <= maxBytes {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return string(try(lo)), true
}

// cut is s within n bytes, at a rune boundary, ending in TruncatedMarker
// when it was longer (the marker alone when n leaves no room for text).
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	keep := max(n-len(TruncatedMarker), 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + TruncatedMarker
}

// walkStrings calls f on each string a message's parts hold that is text
// (content, arguments and responses, at any depth), not on the parts'
// types, ids and names.
func walkStrings(ms []message, f func(*string)) {
	for i := range ms {
		for _, p := range ms[i].Parts {
			for k, v := range p {
				switch k {
				case "type", "id", "name":
					continue
				}
				p[k] = walkValue(v, f)
			}
		}
	}
}

func walkValue(v any, f func(*string)) any {
	switch x := v.(type) {
	case string:
		f(&x)
		return x
	case map[string]any:
		for k, e := range x {
			x[k] = walkValue(e, f)
		}
	case []any:
		for i, e := range x {
			x[i] = walkValue(e, f)
		}
	}
	return v
}

// clone is a deep copy of ms (its JSON, read back).
func clone(ms []message) []message {
	var cp []message
	_ = json.Unmarshal(encode(ms), &cp)
	return cp
}

func encode(ms []message) []byte { return encodeAny(ms) }

// encodeAny is v's JSON, with <, > and & as they are (a person reads it).
func encodeAny(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func flatten(ms []message) []map[string]any {
	var parts []map[string]any
	for _, m := range ms {
		parts = append(parts, m.Parts...)
	}
	return parts
}

func firstText(ms []message, role string) string {
	for _, m := range ms {
		if m.Role != role {
			continue
		}
		for _, p := range m.Parts {
			if p["type"] == "text" {
				return str(p["content"])
			}
		}
	}
	return ""
}

func lastText(ms []message) string {
	for i := len(ms) - 1; i >= 0; i-- {
		for j := len(ms[i].Parts) - 1; j >= 0; j-- {
			if p := ms[i].Parts[j]; p["type"] == "text" {
				return str(p["content"])
			}
		}
	}
	return ""
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

func str(v any) string { s, _ := v.(string); return s }
