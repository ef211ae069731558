package asyncevent

import (
	"testing"

	"github.com/asyncevent/asyncevent/internal/listing"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// FuzzDecodeCursor: no cursor text makes decodeCursor panic, and what it accepts is a
// key of the caller's own partition whose queue key names the same request, and
// re-encodes to a cursor it accepts again.
func FuzzDecodeCursor(f *testing.F) {
	good, _ := listing.EncodeKey(map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: "REQ#r1"}, attrSK: &types.AttributeValueMemberS{Value: "META"},
		attrGSI1PK: &types.AttributeValueMemberS{Value: "USER#u1"},
		attrGSI1SK: &types.AttributeValueMemberS{Value: "QAT#1795421039191#REQ#r1"},
	})
	f.Add(good)
	f.Add("")
	f.Add("e30")
	f.Add("eyJQSyI6MX0")
	f.Add("!!!")
	f.Fuzz(func(t *testing.T, cursor string) {
		key, err := decodeCursor(cursor, attrGSI1PK, attrGSI1SK, "USER#u1")
		if err != nil || key == nil {
			return
		}
		pk := key[attrGSI1PK].(*types.AttributeValueMemberS).Value
		if pk != "USER#u1" {
			t.Fatalf("accepted a cursor of partition %q", pk)
		}
		again, err := listing.EncodeKey(key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeCursor(again, attrGSI1PK, attrGSI1SK, "USER#u1"); err != nil {
			t.Fatalf("re-encoded cursor refused: %v", err)
		}
		if _, err := decodeCursor(again, attrGSI1PK, attrGSI1SK, "USER#u2"); err == nil {
			t.Fatal("a cursor was accepted for another partition")
		}
	})
}
