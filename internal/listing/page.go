package listing

import (
	"context"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"
)

// Limit applies a listing's default and maximum to a requested limit; a limit below
// 0 or above max is invalid.
func Limit(limit, def, max int, invalid error) (int, error) {
	switch {
	case limit == 0:
		return def, nil
	case limit < 0 || limit > max:
		return 0, fmt.Errorf("%w: limit %d, want 1 to %d", invalid, limit, max)
	}
	return limit, nil
}

// Budget is how many items a call may read to fill a page of limit: maxRead (0: ten
// times limit, below limit: invalid) when a filter may pass items over, else limit.
func Budget(limit, maxRead int, filtered bool, invalid error) (int, error) {
	budget := maxRead
	switch {
	case budget == 0:
		budget = 10 * limit
	case budget < limit:
		return 0, fmt.Errorf("%w: maxRead %d is below the limit %d", invalid, budget, limit)
	}
	if !filtered {
		budget = limit
	}
	return budget, nil
}

// A Merge lists the items of several partitions in one order, by the string
// attribute SortKey, forward or backward.
type Merge struct {
	SortKey string
	Forward bool
	// Read reads the next at most n items of a reader's partition into its Ahead,
	// and sets its From and Ended.
	Read func(ctx context.Context, r *Reader, n int) error
	// Keep takes the next item of the listing, and says whether the page holds it.
	Keep func(item Item) (bool, error)
}

// Fill lists items from readers until limit of them are kept, budget are read, or
// every reader is read to its end. A reader with nothing in hand reads on, a share
// of the budget left.
func (m Merge) Fill(ctx context.Context, readers []*Reader, limit, budget int) error {
	kept := 0
	for read := 0; read < budget && kept < limit; read++ {
		for _, r := range readers {
			if len(r.Ahead) == 0 && !r.Ended {
				share := max(1, (budget-read+len(readers)-1)/len(readers))
				if err := m.Read(ctx, r, share); err != nil {
					return err
				}
			}
		}
		next := Next(readers, m.SortKey, m.Forward)
		if next == nil {
			return nil
		}
		item := next.Ahead[0]
		next.Ahead, next.Last = next.Ahead[1:], item
		ok, err := m.Keep(item)
		if err != nil {
			return err
		}
		if ok {
			kept++
		}
	}
	return nil
}

// Gather runs read on partitions 0 … n−1, at most limit at once, and returns what
// they read one partition after the other.
func Gather[T any](ctx context.Context, n, limit int, read func(ctx context.Context, partition int) ([]T, error)) ([]T, error) {
	byPart := make([][]T, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for i := range n {
		g.Go(func() (err error) {
			byPart[i], err = read(gctx, i)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.Concat(byPart...), nil
}
