package asyncevent

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
)

type review43Count int
type review43Name string

// marshalValue must encode every value a row may bind as attributevalue.Marshal
// (and so the per-call expression.Builder) did.
func TestReview43MarshalValueMatchesAttributeValue(t *testing.T) {
	s := "x"
	var nilStr *string
	var nilMillis *EpochMillis
	millis := EpochMillis(5)
	cases := []any{
		"", "x", 0, -1, int8(3), int16(3), int32(3), int64(3), uint(5), uint8(5), uint64(1 << 63), float64(0.5), float32(1.5),
		review43Count(4), review43Name(""), review43Name("y"), true, false, StatusQueued, EpochMillis(0),
		nil, &s, nilStr, &millis, nilMillis,
		[]string{}, []string{"a"}, []int(nil), []byte("b"),
		setOf[string]{"a"}, setOf[int]{1}, setOf[string]{}, setOf[string](nil), setOf[int](nil),
	}
	for _, v := range cases {
		name := fmt.Sprintf("%T(%v)", v, v)
		want, wantErr := attributevalue.Marshal(v)
		var got types.AttributeValue
		var gotErr error
		func() {
			defer func() {
				if r := recover(); r != nil {
					gotErr = fmt.Errorf("panic: %v", r)
				}
			}()
			got, gotErr = marshalValue(v)
		}()
		assert.Equal(t, wantErr, gotErr, name)
		assert.Equal(t, want, got, name)
	}
}
