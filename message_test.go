package asyncevent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMessageRoundTrip(t *testing.T) {
	m := Message{V: 1, RequestID: "r1", EventID: "e1", UserID: "u1", EventType: FirstCome, RequestedAt: 1795421039191}
	body, err := EncodeMessage(m)
	require.NoError(t, err)
	assert.JSONEq(t, `{"v":1,"requestId":"r1","eventId":"e1","userId":"u1","eventType":"FIRST_COME","requestedAt":1795421039191}`, string(body))
	got, err := DecodeMessage(body)
	require.NoError(t, err)
	assert.Equal(t, m, got)
}

func TestDecodeMessageRefusesBadBodies(t *testing.T) {
	tests := []struct {
		name, body, salvaged string
	}{
		{"empty", ``, ""},
		{"not json", `hello`, ""},
		{"array", `[1,2]`, ""},
		{"cut short", `{"v":1,"requestId":"r1","eventId":`, "r1"},
		{"wrong type", `{"requestId":"r1","v":"one"}`, "r1"},
		{"bad request id", `{"v":1,"requestId":"r#1","eventId":"e","userId":"u","eventType":"LOTTERY","requestedAt":5}`, ""},
		{"unknown field", `{"v":1,"requestId":"r1","eventId":"e","userId":"u","eventType":"LOTTERY","requestedAt":5,"x":1}`, "r1"},
		{"future version", `{"v":2,"requestId":"r1","eventId":"e","userId":"u","eventType":"LOTTERY","requestedAt":5}`, "r1"},
		{"unknown type", `{"v":1,"requestId":"r1","eventId":"e","userId":"u","eventType":"RAFFLE","requestedAt":5}`, "r1"},
		{"no time", `{"v":1,"requestId":"r1","eventId":"e","userId":"u","eventType":"LOTTERY"}`, "r1"},
		{"bad user", `{"v":1,"requestId":"r1","eventId":"e","userId":"","eventType":"LOTTERY","requestedAt":5}`, "r1"},
		{"trailing data", `{"v":1,"requestId":"r1","eventId":"e","userId":"u","eventType":"LOTTERY","requestedAt":5} {}`, "r1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodeMessage([]byte(tt.body))
			assert.ErrorIs(t, err, ErrMalformedMessage)
			assert.Equal(t, tt.salvaged, m.RequestID)
		})
	}
	_, err := EncodeMessage(Message{V: 1, RequestID: "r"})
	assert.ErrorIs(t, err, ErrMalformedMessage)
}

// FuzzDecodeMessage: no body makes DecodeMessage panic; what it accepts re-encodes to
// a body it decodes to the same message; a salvaged request ID is always valid.
func FuzzDecodeMessage(f *testing.F) {
	f.Add([]byte(`{"v":1,"requestId":"r1","eventId":"e1","userId":"u1","eventType":"FIRST_COME","requestedAt":1795421039191}`))
	f.Add([]byte(`{"v":1,"requestId":"r1","eventId":`))
	f.Add([]byte(`{"requestId":{"a":[1,2,{"b":"c"}]},"requestId":"x"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := DecodeMessage(body)
		if err != nil {
			if m.RequestID != "" && ValidateID("requestId", m.RequestID) != nil {
				t.Fatalf("salvaged an invalid request ID %q", m.RequestID)
			}
			return
		}
		again, err := EncodeMessage(m)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", body, err)
		}
		back, err := DecodeMessage(again)
		if err != nil || back != m {
			t.Fatalf("%q → %+v → %q → %+v, %v", body, m, again, back, err)
		}
	})
}
