package progress

import (
	"context"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"
)

// ReadPartitions reads an event's progress partitions 0 … partitions−1 with read,
// all at once (a refresh's age is the slowest read's, not their sum), and sums
// them.
func ReadPartitions(ctx context.Context, partitions int, read func(ctx context.Context, partition int) (Tenths, error)) (Tenths, error) {
	parts := make([]Tenths, partitions)
	g, gctx := errgroup.WithContext(ctx)
	for p := range partitions {
		g.Go(func() (err error) {
			parts[p], err = read(gctx, p)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	tenths := parts[0]
	for _, part := range parts[1:] {
		tenths.Add(part)
	}
	return tenths, nil
}

// Numbers returns the number attributes of a progress item by name: its counts.
func Numbers(item map[string]types.AttributeValue) map[string]int64 {
	counts := map[string]int64{}
	for name, v := range item {
		if n, ok := v.(*types.AttributeValueMemberN); ok {
			if x, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
				counts[name] = x
			}
		}
	}
	return counts
}
