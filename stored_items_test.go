package asyncevent

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateStored = flag.Bool("update-stored", false, "rewrite testdata/stored_items.golden")

// renderAV prints an attribute value with its DynamoDB type, sets sorted.
func renderAV(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprintf("BOOL:%t", v.Value)
	case *types.AttributeValueMemberNS:
		ns := append([]string(nil), v.Value...)
		sort.Strings(ns)
		return "NS:" + strings.Join(ns, ",")
	case *types.AttributeValueMemberSS:
		ss := append([]string(nil), v.Value...)
		sort.Strings(ss)
		return "SS:" + strings.Join(ss, ",")
	case *types.AttributeValueMemberNULL:
		return "NULL"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// renderItem prints an item as the table holds it: one attribute a line, sorted.
func renderItem(t *testing.T, name string, item any) string {
	t.Helper()
	av, err := attributevalue.MarshalMap(item)
	require.NoError(t, err)
	names := make([]string, 0, len(av))
	for n := range av {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", name)
	for _, n := range names {
		fmt.Fprintf(&b, "%s = %s\n", n, renderAV(av[n]))
	}
	return b.String()
}

// TestStoredItemsUnchanged pins the attributes of a fully set EventConfig item and
// Request item, names, types and values, to testdata/stored_items.golden, written
// before the caller's types (EventSettings, Event, Request) were split from the stored
// ones: the table's data is the same whatever a caller's type looks like
// (CHANGELOG's compatibility promise).
func TestStoredItemsUnchanged(t *testing.T) {
	got := renderItem(t, "EventConfig item", fullConfigItem(t)) + "\n" + renderItem(t, "Request item", fullRequestItem(t))
	golden := filepath.Join("testdata", "stored_items.golden")
	if *updateStored {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), got)
}
