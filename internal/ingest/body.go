package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ErrTrailingData reports a message body with data after its JSON object.
var ErrTrailingData = errors.New("data after the JSON object")

// DecodeBody reads a message body into v strictly: one JSON object, no field v does
// not name, nothing after it. An error of the object is json's; one of what follows
// it is ErrTrailingData, with v filled in.
func DecodeBody(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return ErrTrailingData
	}
	return nil
}

// SalvageField reads the top-level string field of a body that does not decode whole
// (cut short, a field of the wrong type), or returns "" when the body names no value
// of it that valid accepts before the damage.
func SalvageField(body []byte, field string, valid func(string) bool) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		if key == field {
			v, err := dec.Token()
			if s, ok := v.(string); ok && err == nil && valid(s) {
				return s
			}
			return ""
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ""
		}
	}
	return ""
}
