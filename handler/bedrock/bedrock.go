package bedrock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/sqsonce/sqsonce/handler"
)

// API is the part of *bedrockruntime.Client the provider calls.
type API interface {
	Converse(ctx context.Context, in *bedrockruntime.ConverseInput, optFns ...func(*bedrockruntime.Options)) (*bedrockruntime.ConverseOutput, error)
}

var _ API = (*bedrockruntime.Client)(nil)

// NoRetries is a client option that turns the SDK's automatic retries off:
// every operation is attempted exactly once ([aws.NopRetryer]). It overrides
// the retry settings of the aws.Config and the environment
// (AWS_MAX_ATTEMPTS, AWS_RETRY_MODE).
func NoRetries(o *bedrockruntime.Options) {
	o.Retryer = aws.NopRetryer{}
	o.RetryMaxAttempts = 1
}

// NewClient returns a Bedrock Runtime client for cfg with automatic retries
// turned off ([NoRetries] applied after optFns). Build it once, at start-up.
func NewClient(cfg aws.Config, optFns ...func(*bedrockruntime.Options)) *bedrockruntime.Client {
	return bedrockruntime.NewFromConfig(cfg, append(optFns, NoRetries)...)
}

// Provider is a [handler.Provider] on the Amazon Bedrock Converse API.
type Provider struct {
	api API
}

var _ handler.Provider = (*Provider)(nil)

// New returns a Provider calling api. Build api with [NewClient], so that a
// failed call is not retried by the SDK.
func New(api API) *Provider { return &Provider{api: api} }

// Name implements [handler.Provider]: "bedrock".
func (*Provider) Name() string { return "bedrock" }

// Complete implements [handler.Provider]: one Converse request, the
// instructions as the system prompt and the document as the user message.
func (p *Provider) Complete(ctx context.Context, c handler.Call) (handler.Completion, error) {
	if c.Model == "" {
		return handler.Completion{}, errors.New("bedrock: no model id")
	}
	in := &bedrockruntime.ConverseInput{
		ModelId: aws.String(c.Model),
		Messages: []types.Message{{
			Role:    types.ConversationRoleUser,
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: c.Text}},
		}},
	}
	if c.System != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: c.System}}
	}
	if ic := inference(c.Parameters); ic != nil {
		in.InferenceConfig = ic
	}
	out, err := p.api.Converse(ctx, in)
	if err != nil {
		return handler.Completion{}, fmt.Errorf("bedrock: converse %s: %w", c.Model, err)
	}
	var text strings.Builder
	if msg, ok := out.Output.(*types.ConverseOutputMemberMessage); ok {
		for _, block := range msg.Value.Content {
			if t, ok := block.(*types.ContentBlockMemberText); ok {
				text.WriteString(t.Value)
			}
		}
	}
	comp := handler.Completion{Text: text.String(), Model: c.Model, StopReason: string(out.StopReason)}
	if u := out.Usage; u != nil {
		comp.InputTokens = int(aws.ToInt32(u.InputTokens))
		comp.OutputTokens = int(aws.ToInt32(u.OutputTokens))
	}
	return comp, nil
}

func inference(p handler.Parameters) *types.InferenceConfiguration {
	if p.IsZero() {
		return nil
	}
	ic := &types.InferenceConfiguration{StopSequences: p.StopSequences}
	if p.Temperature != nil {
		ic.Temperature = aws.Float32(float32(*p.Temperature))
	}
	if p.TopP != nil {
		ic.TopP = aws.Float32(float32(*p.TopP))
	}
	if p.MaxTokens != nil {
		ic.MaxTokens = aws.Int32(int32(min(*p.MaxTokens, math.MaxInt32)))
	}
	return ic
}
