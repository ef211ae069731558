package bench

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Instant is a DynamoDB endpoint inside the process that answers each call at once:
// the items of PutItem calls and of a transaction's Puts are kept by key and returned
// to GetItem; a PutItem on condition attribute_not_exists of a kept key, and an
// UpdateItem of capacityRemaining on a kept item that has none left, fail their
// condition with the item (as DynamoDB does with ReturnValuesOnConditionCheckFailure
// ALL_OLD); every other call succeeds with an empty answer, its update not applied. A client on it runs all
// of the SDK (serialization, signing, retry middleware, deserialization) and none of
// the network or DynamoDB: what a call costs the caller's CPU.
type Instant struct {
	mu    sync.Mutex
	puts  map[string][]byte // the body of each item's last put, by key
	calls atomic.Int64
}

// Calls is the number of calls the endpoint answered.
func (in *Instant) Calls() int64 { return in.calls.Load() }

// Client returns an SDK client of the endpoint.
func (in *Instant) Client() *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://dynamodb.instant.invalid"),
		Credentials:  credentials.NewStaticCredentialsProvider("instant", "instant", ""),
		HTTPClient:   &http.Client{Transport: in},
	})
}

// putKey returns the table key of a PutItem's item, found in its JSON without
// decoding it (the endpoint's own CPU is not what is measured), "" when none.
func putKey(body []byte) string {
	item := bytes.Index(body, []byte(`"Item":`))
	if item < 0 {
		return ""
	}
	attr := func(name string) string {
		mark := []byte(`"` + name + `":{"S":"`)
		i := bytes.Index(body[item:], mark)
		if i < 0 {
			return ""
		}
		v := body[item+i+len(mark):]
		if end := bytes.IndexByte(v, '"'); end >= 0 {
			return string(v[:end])
		}
		return ""
	}
	return attr("PK") + "\x00" + attr("SK")
}

// itemOf returns the item of a PutItem's body, kept whole by the endpoint.
func itemOf(body []byte) string {
	var put struct{ Item json.RawMessage }
	_ = json.Unmarshal(body, &put)
	return string(put.Item)
}

// RoundTrip answers one call.
func (in *Instant) RoundTrip(r *http.Request) (*http.Response, error) {
	in.calls.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	status, answer := in.answer(r.Header.Get("X-Amz-Target"), body)
	return &http.Response{
		StatusCode: status, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(strings.NewReader(answer)), ContentLength: int64(len(answer)), Request: r,
	}, nil
}

func (in *Instant) answer(target string, body []byte) (int, string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.puts == nil {
		in.puts = map[string][]byte{}
	}
	switch target[strings.LastIndexByte(target, '.')+1:] {
	case "GetItem":
		var get struct {
			Key struct{ PK, SK struct{ S string } }
		}
		if json.Unmarshal(body, &get) == nil {
			if put, ok := in.puts[get.Key.PK.S+"\x00"+get.Key.SK.S]; ok {
				return http.StatusOK, `{"Item":` + itemOf(put) + `}`
			}
		}
	case "PutItem":
		k := putKey(body)
		if old, ok := in.puts[k]; ok && bytes.Contains(body, []byte("attribute_not_exists")) {
			return http.StatusBadRequest, `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed","Item":` + itemOf(old) + `}`
		}
		in.puts[k] = body
	case "UpdateItem":
		// A capacity claim on an empty CAPACITY item fails its condition; every other
		// update succeeds without being applied (the flows keep their items as set up).
		if bytes.Contains(body, []byte("capacityRemaining")) {
			var update struct {
				Key struct{ PK, SK struct{ S string } }
			}
			if json.Unmarshal(body, &update) == nil {
				if put, ok := in.puts[update.Key.PK.S+"\x00"+update.Key.SK.S]; ok && bytes.Contains(put, []byte(`"capacityRemaining":{"N":"0"}`)) {
					return http.StatusBadRequest, `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed","Item":` + itemOf(put) + `}`
				}
			}
		}
	case "TransactWriteItems":
		var tx struct {
			TransactItems []struct {
				Put *struct{ Item json.RawMessage }
			}
		}
		if json.Unmarshal(body, &tx) != nil {
			break
		}
		for _, t := range tx.TransactItems {
			if t.Put != nil {
				put := []byte(`{"Item":` + string(t.Put.Item) + `}`)
				in.puts[putKey(put)] = put
			}
		}
	}
	return http.StatusOK, "{}"
}

// capacityRemaining is a CAPACITY item's seats left, as a put's JSON holds them.
var capacityRemaining = regexp.MustCompile(`"capacityRemaining":\{"N":"[0-9]+"\}`)

// sellOut takes every seat of the CAPACITY items kept, and marks each sold out, as
// the last claims of a sold-out event leave them.
func (in *Instant) sellOut() {
	in.mu.Lock()
	defer in.mu.Unlock()
	for k, put := range in.puts {
		if strings.HasSuffix(k, "\x00CAPACITY") {
			in.puts[k] = capacityRemaining.ReplaceAll(put, []byte(`"capacityRemaining":{"N":"0"},"soldOut":{"BOOL":true}`))
		}
	}
}
