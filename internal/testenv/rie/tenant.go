package rie

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
)

// HeaderTenantID is the invoke request's header that names the tenant of a
// function in tenant isolation mode. The emulator's classic mode hands it
// to the runtime as Lambda-Runtime-Aws-Tenant-Id, aws-lambda-go's
// lambdacontext.LambdaContext.TenantID; Lambda Managed Instances mode
// ignores it.
const HeaderTenantID = "X-Amz-Tenant-Id"

// CallTenant is [Function.Call] for an invocation of tenant tenantID.
func (f *Function) CallTenant(ctx context.Context, tenantID string, payload []byte) ([]byte, error) {
	return f.call(ctx, payload, http.Header{HeaderTenantID: {tenantID}})
}

// InvokeTenant is [Function.Invoke] for an invocation of tenant tenantID.
func (f *Function) InvokeTenant(ctx context.Context, tenantID string, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return f.invoke(ctx, ev, http.Header{HeaderTenantID: {tenantID}})
}

// invoke is [Function.Invoke] with header added to the invoke request.
func (f *Function) invoke(ctx context.Context, ev events.SQSEvent, header http.Header) (events.SQSEventResponse, error) {
	payload, err := json.Marshal(ev)
	if err != nil {
		return events.SQSEventResponse{}, fmt.Errorf("rie: %w", err)
	}
	body, err := f.call(ctx, payload, header)
	if err != nil {
		return events.SQSEventResponse{}, err
	}
	var resp events.SQSEventResponse
	if t := bytes.TrimSpace(body); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		if err := json.Unmarshal(t, &resp); err != nil {
			return events.SQSEventResponse{}, fmt.Errorf("rie: the response is not a partial batch response: %w", err)
		}
	}
	return resp, nil
}

// call is [Function.Call] with header added to the invoke request.
func (f *Function) call(ctx context.Context, payload []byte, header http.Header) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("rie: %w", err)
	}
	for k, v := range header {
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("rie: invoke: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("rie: invoke: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("rie: invoke: status %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	if !json.Valid(body) {
		// The emulator reports a timeout in plain text.
		typ := "Runtime.InvalidResponse"
		if bytes.HasPrefix(body, []byte("Task timed out")) {
			typ = "Sandbox.Timedout"
		}
		return nil, &FunctionError{Type: typ, Message: string(bytes.TrimSpace(body))}
	}
	var fe struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	if resp.Header.Get("X-Amz-Function-Error") != "" ||
		json.Unmarshal(body, &fe) == nil && (fe.Type != "" || fe.Message != "") {
		return nil, &FunctionError{Type: fe.Type, Message: fe.Message}
	}
	return body, nil
}
