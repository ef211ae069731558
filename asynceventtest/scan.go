package asynceventtest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent"
)

// ScanTable returns every item of a table made by the kit (on the test binary's
// DynamoDB Local or an OwnDynamoDB), or else of the test binary's DynamoDB Local, for
// checks that must see everything (orphans, stray index keys). Only the test kit
// scans; the library never does.
func ScanTable(t testing.TB, table string) []map[string]types.AttributeValue {
	t.Helper()
	var items []map[string]types.AttributeValue
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for pages := dynamodb.NewScanPaginator(tableClient(t, table), in); pages.HasMorePages(); {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatalf("asynceventtest: scan %s: %v", table, err)
		}
		items = append(items, page.Items...)
	}
	return items
}

// UnmarshalRequest reads a Request from a raw item, as ScanTable returns them.
func UnmarshalRequest(t testing.TB, item map[string]types.AttributeValue) asyncevent.Request {
	t.Helper()
	var r asyncevent.Request
	if err := attributevalue.UnmarshalMap(item, &r); err != nil {
		t.Fatalf("asynceventtest: %v", err)
	}
	return r
}
