// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	conventions "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/otelcol-gym/otelcol-gym/internal/gymconv"
	"github.com/otelcol-gym/otelcol-gym/internal/modelcall"
)

// operationNames maps Gym's capture dialects to gen_ai.operation.name; a
// dialect not listed is taken as chat, which every model route is (a
// capture's strings never become values they were not checked against).
var operationNames = map[string]string{
	"responses":   conventions.GenAIOperationNameChat.Value.AsString(),
	"chat":        conventions.GenAIOperationNameChat.Value.AsString(),
	"messages":    conventions.GenAIOperationNameChat.Value.AsString(),
	"completions": conventions.GenAIOperationNameTextCompletion.Value.AsString(),
}

// maxAnnotations is how many attributes annotateCall may add.
const maxAnnotations = 15

// The names chatspan.go reads back.
var (
	attrOperation    = string(conventions.GenAIOperationNameKey)
	attrRequestModel = string(conventions.GenAIRequestModelKey)
	attrErrorType    = string(conventions.ErrorTypeKey)
)

// lineless is gen_ai.operation.name of a call whose capture line never came
// or names no dialect known here: every model route is one of the chat
// dialects'.
var lineless = conventions.GenAIOperationNameChat.Value.AsString()

// annotatePart puts on a span of a model call that does not stand for it
// (callspan.go) the call's id alone.
func annotatePart(attrs pcommon.Map, l *modelcall.Line) {
	if l.ModelCallID != "" {
		attrs.PutStr(gymconv.ModelCallIDAttribute, l.ModelCallID)
	}
}

// annotateLineless puts on the span that stands for a call whose capture
// line never came what is known without it: the operation and the rollout
// as the conversation.
func annotateLineless(attrs pcommon.Map, rollout, provider string) {
	attrs.PutStr(string(conventions.GenAIOperationNameKey), lineless)
	putConversation(attrs, rollout)
	if provider != "" {
		attrs.PutStr(string(conventions.GenAIProviderNameKey), provider)
	}
}

// putConversation makes the rollout the GenAI conversation
// (gen_ai.conversation.id) and the session (session.id: Langfuse groups
// traces by it, Phoenix too when it is set).
func putConversation(attrs pcommon.Map, rollout string) {
	attrs.PutStr(string(conventions.GenAIConversationIDKey), rollout)
	attrs.PutStr(string(conventions.SessionIDKey), rollout)
}

// annotateAgent makes the rollout's agent span invoke_agent, the rollout
// the conversation.
func annotateAgent(attrs pcommon.Map, agent, rollout string) {
	attrs.PutStr(string(conventions.GenAIOperationNameKey), conventions.GenAIOperationNameInvokeAgent.Value.AsString())
	if agent != "" {
		attrs.PutStr(string(conventions.GenAIAgentNameKey), agent)
	}
	putConversation(attrs, rollout)
}

// annotateTool makes a tool call execute_tool: the tool's name (from the
// route) and the model's call id when the capture gave it.
func annotateTool(attrs pcommon.Map, tool, callID, rollout string) {
	attrs.PutStr(string(conventions.GenAIOperationNameKey), conventions.GenAIOperationNameExecuteTool.Value.AsString())
	attrs.PutStr(string(conventions.GenAIToolNameKey), tool)
	if callID != "" {
		attrs.PutStr(string(conventions.GenAIToolCallIDKey), callID)
	}
	putConversation(attrs, rollout)
}

// annotateCall puts on a model call's chat span (chatspan.go) the attributes
// its capture line gives (design §4.7), and the rollout as the GenAI
// conversation, and nothing else: never a body, every string bounded
// (modelcall.MaxString), an attribute whose value the line lacks is not set.
// gen_ai.request.model is the model the request named, else the model that
// answered it (Gym's agents name none: the model server names its own
// upstream, and the response says which); Gym's model server, which the
// conventions have no name for, is nemo.gym.model_call.server.
// The values replace what the span had, so annotating twice changes nothing.
func annotateCall(attrs pcommon.Map, l *modelcall.Line, rollout, provider string) {
	attrs.EnsureCapacity(attrs.Len() + maxAnnotations)
	putString := func(k, v string) {
		if v != "" {
			attrs.PutStr(k, v)
		}
	}
	op, ok := operationNames[l.Dialect]
	if !ok {
		op = lineless
	}
	attrs.PutStr(string(conventions.GenAIOperationNameKey), op)
	putConversation(attrs, rollout)
	putString(string(conventions.GenAIProviderNameKey), provider)
	requestModel := l.RequestModel
	if requestModel == "" {
		requestModel = l.ResponseModel
	}
	putString(string(conventions.GenAIRequestModelKey), requestModel)
	putString(gymconv.ModelCallServerAttribute, l.Model)
	putString(string(conventions.GenAIResponseModelKey), l.ResponseModel)
	putString(string(conventions.GenAIResponseIDKey), l.ResponseID)
	if l.InputTokens != nil {
		attrs.PutInt(string(conventions.GenAIUsageInputTokensKey), *l.InputTokens)
	}
	if l.OutputTokens != nil {
		attrs.PutInt(string(conventions.GenAIUsageOutputTokensKey), *l.OutputTokens)
	}
	if len(l.FinishReasons) > 0 {
		s := attrs.PutEmptySlice(string(conventions.GenAIResponseFinishReasonsKey))
		for _, r := range l.FinishReasons {
			s.AppendEmpty().SetStr(r)
		}
	}
	putString(string(conventions.ErrorTypeKey), l.ErrorType())
	putString(gymconv.ModelCallIDAttribute, l.ModelCallID)
	if l.TTFTMS != nil {
		attrs.PutDouble(gymconv.ModelCallTTFTAttribute, *l.TTFTMS)
	}
}
