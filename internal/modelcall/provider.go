// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package modelcall

import (
	"strings"

	conventions "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// providerHosts are the API hosts of the providers the GenAI conventions
// name: a host that is host, or (sub) ends with it, and starts with prefix.
// A model server whose calls to its LLM go there serves that provider's
// models.
var providerHosts = []struct {
	prefix, host string
	sub          bool
	provider     string
}{
	{"", "api.openai.com", false, conventions.GenAIProviderNameOpenAI.Value.AsString()},
	{"", ".openai.azure.com", true, conventions.GenAIProviderNameAzureAIOpenAI.Value.AsString()},
	{"", ".services.ai.azure.com", true, conventions.GenAIProviderNameAzureAIInference.Value.AsString()},
	{"", "api.anthropic.com", false, conventions.GenAIProviderNameAnthropic.Value.AsString()},
	{"", "generativelanguage.googleapis.com", false, conventions.GenAIProviderNameGCPGemini.Value.AsString()},
	{"", "aiplatform.googleapis.com", false, conventions.GenAIProviderNameGCPVertexAI.Value.AsString()},
	{"", "-aiplatform.googleapis.com", true, conventions.GenAIProviderNameGCPVertexAI.Value.AsString()},
	{"bedrock-runtime.", ".amazonaws.com", true, conventions.GenAIProviderNameAWSBedrock.Value.AsString()},
	{"", "api.mistral.ai", false, conventions.GenAIProviderNameMistralAI.Value.AsString()},
	{"", "api.groq.com", false, conventions.GenAIProviderNameGroq.Value.AsString()},
	{"", "api.deepseek.com", false, conventions.GenAIProviderNameDeepseek.Value.AsString()},
	{"", "api.x.ai", false, conventions.GenAIProviderNameXAI.Value.AsString()},
	{"", "api.perplexity.ai", false, conventions.GenAIProviderNamePerplexity.Value.AsString()},
	{"", "api.cohere.com", false, conventions.GenAIProviderNameCohere.Value.AsString()},
	{"", "api.cohere.ai", false, conventions.GenAIProviderNameCohere.Value.AsString()},
}

// Provider is gen_ai.provider.name of the LLM a model server's call to it
// (an Upstream span) reaches, told by its URL's host; "" when the host is
// none of the providers' (a vLLM of one's own, a stub).
func Provider(s Span) string {
	full := s.URLFull
	if full == "" {
		full = s.HTTPURL
	}
	_, rest, ok := strings.Cut(full, "://")
	if !ok {
		return ""
	}
	host := rest
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		host = host[:i]
	}
	host = strings.ToLower(host)
	for _, p := range providerHosts {
		if strings.HasPrefix(host, p.prefix) && (host == p.host || p.sub && strings.HasSuffix(host, p.host)) {
			return p.provider
		}
	}
	return ""
}
