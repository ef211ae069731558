package listing

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

var errInvalid = errors.New("invalid cursor")

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func key(part, n string) Item {
	return Item{"PK": s("R#" + n), "SK": s("M"), "IPK": s(part), "ISK": s("Q#" + n)}
}

var codec = Codec{PK: "PK", SK: "SK", IndexPK: "IPK", IndexSK: "ISK", Invalid: errInvalid}

func TestNextMergesInOrder(t *testing.T) {
	a := &Reader{Partition: "a", Ahead: []Item{key("a", "2")}}
	b := &Reader{Partition: "b", Ahead: []Item{key("b", "1")}}
	if got := Next([]*Reader{a, b}, "ISK", true); got != b {
		t.Fatal("forward: b's 1 comes first")
	}
	if got := Next([]*Reader{a, b}, "ISK", false); got != a {
		t.Fatal("backward: a's 2 comes first")
	}
	if got := Next([]*Reader{{Partition: "a"}}, "ISK", true); got != nil {
		t.Fatal("nothing ahead: nil")
	}
}

func TestCursorsRoundTrip(t *testing.T) {
	t.Run("one partition", func(t *testing.T) {
		r := &Reader{Partition: "a", Last: key("a", "5")}
		c, err := codec.Encode([]*Reader{r})
		if err != nil || c == "" {
			t.Fatal(c, err)
		}
		rs, err := codec.Decode(c, []string{"a"})
		if err != nil || rs[0].From["ISK"].(*types.AttributeValueMemberS).Value != "Q#5" {
			t.Fatal(rs, err)
		}
		if _, err := codec.Decode(c, []string{"b"}); !errors.Is(err, errInvalid) {
			t.Fatalf("another partition's cursor: %v", err)
		}
	})
	t.Run("several partitions, one ended", func(t *testing.T) {
		rs := []*Reader{{Partition: "a", Last: key("a", "5")}, {Partition: "b", Ended: true}}
		c, err := codec.Encode(rs)
		if err != nil {
			t.Fatal(err)
		}
		back, err := codec.Decode(c, []string{"a", "b"})
		if err != nil || back[0].From == nil || !back[1].Ended {
			t.Fatal(back, err)
		}
		if _, err := codec.Decode(c, []string{"a"}); !errors.Is(err, errInvalid) {
			t.Fatalf("a sharded cursor on one partition: %v", err)
		}
	})
	t.Run("every partition read to its end", func(t *testing.T) {
		if c, err := codec.Encode([]*Reader{{Partition: "a", Ended: true}}); c != "" || err != nil {
			t.Fatal(c, err)
		}
	})
	t.Run("what the codec did not write is invalid", func(t *testing.T) {
		for _, c := range []string{"%%%", "e30", string(make([]byte, MaxLength+1))} {
			if _, err := codec.DecodeKey(c, "a"); !errors.Is(err, errInvalid) {
				t.Errorf("%q: %v", c, err)
			}
		}
		checked := codec
		checked.Check = func(map[string]string) string { return "not ours" }
		good, _ := EncodeKey(key("a", "1"))
		if _, err := checked.DecodeKey(good, "a"); !errors.Is(err, errInvalid) {
			t.Fatalf("Check refused: %v", err)
		}
	})
	t.Run("a table key", func(t *testing.T) {
		c, _ := EncodeKey(Item{"PK": s("E"), "SK": s("C#1")})
		pk, sk, err := codec.DecodeTableKey(c)
		if err != nil || pk != "E" || sk != "C#1" {
			t.Fatal(pk, sk, err)
		}
	})
}
