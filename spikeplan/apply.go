package spikeplan

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/asyncevent/asyncevent"
)

// TableUpdater is the part of the DynamoDB API that Apply uses; *dynamodb.Client has
// it.
type TableUpdater interface {
	UpdateTable(ctx context.Context, in *dynamodb.UpdateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTableOutput, error)
}

// Apply raises the warm throughput of table and of each index the plan finds short
// (of its Warm against its Need), in one UpdateTable call on db; table is the one
// the plan was made for ([For]). It is a one-way change, and billed: warm
// throughput cannot be lowered again. It does nothing when nothing is short.
// (DynamoDB Local ignores warm throughput.) It raises neither the account's
// on-demand quota (OverQuota: a request to AWS) nor an on-demand maximum set on the
// table (Capped).
func Apply(ctx context.Context, db TableUpdater, table string, p *Plan) error {
	short := p.short()
	if len(short) == 0 {
		return nil
	}
	warm := func(t Throughput) *types.WarmThroughput {
		return &types.WarmThroughput{ReadUnitsPerSecond: aws.Int64(t.ReadUnitsPerSecond), WriteUnitsPerSecond: aws.Int64(t.WriteUnitsPerSecond)}
	}
	in := &dynamodb.UpdateTableInput{TableName: aws.String(table)}
	if t, ok := short[""]; ok {
		in.WarmThroughput = warm(t)
	}
	for _, index := range []string{asyncevent.IndexUser, asyncevent.IndexEvent} {
		if t, ok := short[index]; ok {
			in.GlobalSecondaryIndexUpdates = append(in.GlobalSecondaryIndexUpdates, types.GlobalSecondaryIndexUpdate{
				Update: &types.UpdateGlobalSecondaryIndexAction{IndexName: aws.String(index), WarmThroughput: warm(t)},
			})
		}
	}
	if _, err := db.UpdateTable(ctx, in); err != nil {
		return fmt.Errorf("raise the warm throughput of %s: %w", table, err)
	}
	return nil
}
