package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/httpapi"
	"github.com/asyncevent/asyncevent/queue"
)

func TestMain(m *testing.M) { asynceventtest.Main(m) }

// A click through API Gateway's payload (format 2.0) is a participation on the
// queue, and its request reads back with its place in line.
func TestAClickThroughTheProxy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := asynceventtest.NewTable(t)
	_, err := client.CreateEvent(ctx, asyncevent.EventSettings{EventID: "sale", EventType: asyncevent.FirstCome, CapacityTotal: 5})
	require.NoError(t, err)
	q := queue.NewMemory(queue.MemoryOptions{})
	secret := []byte("ingest-test-secret-0123456789abcdef")
	auth, err := httpapi.NewJWTAuthenticator(secret, httpapi.JWTOptions{})
	require.NoError(t, err)
	handle, err := newHandler(client, q, auth, func(string) string { return "" })
	require.NoError(t, err)
	tok, err := httpapi.MintToken(secret, "ann", httpapi.RoleUser, time.Now().Add(time.Hour))
	require.NoError(t, err)
	call := func(method, path string) events.APIGatewayV2HTTPResponse {
		resp, err := handle(ctx, events.APIGatewayV2HTTPRequest{
			Version: "2.0", RawPath: path, Headers: map[string]string{"authorization": "Bearer " + tok},
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}},
		})
		require.NoError(t, err)
		return resp
	}
	resp := call("POST", "/events/sale/participations")
	require.Equal(t, http.StatusAccepted, resp.StatusCode, resp.Body)
	var part httpapi.ParticipationView
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &part))
	assert.Equal(t, 1, q.Len().Visible, "the participation is on the queue")
	resp = call("GET", "/requests/"+part.RequestID)
	require.Equal(t, http.StatusOK, resp.StatusCode, resp.Body)
	var r httpapi.RequestView
	require.NoError(t, json.Unmarshal([]byte(resp.Body), &r))
	assert.Equal(t, asyncevent.StatusQueued, r.Status)
	assert.Equal(t, http.StatusUnauthorized, func() int {
		resp, err := handle(ctx, events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: "/me/participations",
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: "/me/participations"}}})
		require.NoError(t, err)
		return resp.StatusCode
	}(), "no token")
	pre, err := handle(ctx, events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: "/events/sale/participations",
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "OPTIONS", Path: "/events/sale/participations"}}})
	require.NoError(t, err)
	assert.Equal(t, http.StatusNoContent, pre.StatusCode, "a CORS preflight, without a token: API Gateway adds the headers")
	_, err = newHandler(client, q, auth, func(string) string { return "-1" })
	assert.Error(t, err, "a negative ASYNCEVENT_USER_RATE")
}

func TestTheIdentityProviderIsRequired(t *testing.T) {
	t.Parallel()
	_, err := authenticator(context.Background(), func(string) string { return "" })
	assert.ErrorContains(t, err, "ASYNCEVENT_JWKS_URL")
}
