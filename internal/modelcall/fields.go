// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package modelcall

// The capture line's fields that are read, by their place in the line
// (Gym's CaptureStore names); every other key's value is skipped.

func (r *rawLine) topField(s *scanner, key []byte) error {
	switch string(key) {
	case "model_call_id":
		return s.str(&r.ModelCallID)
	case "dialect":
		return s.str(&r.Dialect)
	case "model_ref":
		return s.objectOf(func() { r.ModelRefName = jsonStr{} }, func(s *scanner, key []byte) error {
			if string(key) == "name" {
				return s.str(&r.ModelRefName)
			}
			return s.skip()
		})
	case "started_at":
		return s.num(&r.StartedAt)
	case "completed_at":
		return s.num(&r.CompletedAt)
	case "latency_ms":
		return s.num(&r.LatencyMS)
	case "latency_ttft_ms":
		return s.num(&r.LatencyTTFTMS)
	case "status_code":
		return s.num(&r.StatusCode)
	case "error_category":
		return s.str(&r.ErrorCategory)
	case "request":
		return s.objectOf(func() { r.RequestModel = jsonStr{} }, func(s *scanner, key []byte) error {
			if string(key) == "model" {
				return s.str(&r.RequestModel)
			}
			return s.skip()
		})
	case "response":
		return s.objectOf(func() { r.Response = rawResponse{} }, r.Response.field)
	}
	return s.skip()
}

func (r *rawResponse) field(s *scanner, key []byte) error {
	switch string(key) {
	case "id":
		return s.str(&r.ID)
	case "model":
		return s.str(&r.Model)
	case "status":
		return s.str(&r.Status)
	case "stop_reason":
		return s.str(&r.StopReason)
	case "incomplete_details":
		return s.objectOf(func() { r.IncompleteReason = jsonStr{} }, func(s *scanner, key []byte) error {
			if string(key) == "reason" {
				return s.str(&r.IncompleteReason)
			}
			return s.skip()
		})
	case "choices":
		r.FinishReasons, r.ChoiceCalls = r.FinishReasons[:0], r.ChoiceCalls[:0]
		if s.i < len(s.b) && s.b[s.i] == '[' {
			return s.array(r.choice)
		}
		return s.skip()
	case "output":
		r.OutputCalls = r.OutputCalls[:0]
		return s.toolCalls(&r.OutputCalls, "function_call", "call_id")
	case "content":
		r.ContentCalls = r.ContentCalls[:0]
		return s.toolCalls(&r.ContentCalls, "tool_use", "id")
	case "usage":
		return s.objectOf(r.resetUsage, r.usageField)
	}
	return s.skip()
}

// choice reads one of the chat dialect's choices: its finish_reason, kept
// when it is a non-empty string and fewer than MaxFinishReasons are kept,
// and its message's tool calls, kept while fewer than MaxToolCalls are.
func (r *rawResponse) choice(s *scanner) error {
	var reason jsonStr
	var calls []rawToolCall
	err := s.objectOf(func() {}, func(s *scanner, key []byte) error {
		switch string(key) {
		case "finish_reason":
			return s.str(&reason)
		case "message":
			return s.objectOf(func() { calls = calls[:0] }, func(s *scanner, key []byte) error {
				if string(key) == "tool_calls" {
					calls = calls[:0]
					return s.chatToolCalls(&calls)
				}
				return s.skip()
			})
		}
		return s.skip()
	})
	if err == nil && reason.ok && reason.v != "" && len(r.FinishReasons) < MaxFinishReasons {
		r.FinishReasons = append(r.FinishReasons, reason)
	}
	for _, c := range calls {
		if err == nil && len(r.ChoiceCalls) < MaxToolCalls {
			r.ChoiceCalls = append(r.ChoiceCalls, c)
		}
	}
	return err
}

// toolCalls reads the responses dialect's output (items of type
// function_call: name, call_id) or the messages dialect's content (items of
// type tool_use: name, id) into dst: the items of that type with a
// non-empty name, while fewer than MaxToolCalls are kept.
func (s *scanner) toolCalls(dst *[]rawToolCall, typ, idKey string) error {
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return s.skip()
	}
	return s.array(func(s *scanner) error {
		var c rawToolCall
		var t jsonStr
		err := s.objectOf(func() { c, t = rawToolCall{}, jsonStr{} }, func(s *scanner, key []byte) error {
			switch string(key) {
			case "type":
				return s.str(&t)
			case "name":
				return s.str(&c.Name)
			case idKey:
				return s.str(&c.ID)
			}
			return s.skip()
		})
		if err == nil && t.ok && t.v == typ && c.Name.ok && c.Name.v != "" && len(*dst) < MaxToolCalls {
			*dst = append(*dst, c)
		}
		return err
	})
}

// chatToolCalls reads a chat message's tool_calls (id, function.name) into
// dst: those with a non-empty name, while fewer than MaxToolCalls are kept.
func (s *scanner) chatToolCalls(dst *[]rawToolCall) error {
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return s.skip()
	}
	return s.array(func(s *scanner) error {
		var c rawToolCall
		err := s.objectOf(func() { c = rawToolCall{} }, func(s *scanner, key []byte) error {
			switch string(key) {
			case "id":
				return s.str(&c.ID)
			case "function":
				return s.objectOf(func() { c.Name = jsonStr{} }, func(s *scanner, key []byte) error {
					if string(key) == "name" {
						return s.str(&c.Name)
					}
					return s.skip()
				})
			}
			return s.skip()
		})
		if err == nil && c.Name.ok && c.Name.v != "" && len(*dst) < MaxToolCalls {
			*dst = append(*dst, c)
		}
		return err
	})
}

func (r *rawResponse) resetUsage() {
	r.InputTokens, r.OutputTokens, r.PromptTokens, r.CompletionTokens = jsonNum{}, jsonNum{}, jsonNum{}, jsonNum{}
}

func (r *rawResponse) usageField(s *scanner, key []byte) error {
	switch string(key) {
	case "input_tokens":
		return s.num(&r.InputTokens)
	case "output_tokens":
		return s.num(&r.OutputTokens)
	case "prompt_tokens":
		return s.num(&r.PromptTokens)
	case "completion_tokens":
		return s.num(&r.CompletionTokens)
	}
	return s.skip()
}
