package asyncevent

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/asyncevent/asyncevent/internal/drawproof"
	"github.com/asyncevent/asyncevent/seed"
)

// seedCommitment is the hex SHA-256 of a seed, published before the draw.
var seedCommitment = drawproof.Commitment

// newDrawRecord makes a new LOTTERY event's Draw record and sets the config's
// seedCommitment, seedMode and phase.
func (c *Client) newDrawRecord(ctx context.Context, cfg *eventItem) (DrawRecord, error) {
	record := DrawRecord{EventID: cfg.EventID, Phase: PhaseCollecting, WinnerCount: cfg.WinnerCount}
	var drawSeed []byte
	var err error
	if c.opts.Seeds != nil {
		record.SeedMode = seed.Sealed
		drawSeed, err = drawproof.FromSource(ctx, c.opts.Seeds.Seed, cfg.EventID)
	} else {
		record.SeedMode = seed.Unsealed
		drawSeed, err = drawproof.NewSeed()
		record.Seed = hex.EncodeToString(drawSeed)
	}
	if err != nil {
		return DrawRecord{}, err
	}
	record.SeedCommitment = seedCommitment(drawSeed)
	cfg.SeedCommitment, cfg.SeedMode, cfg.Phase = record.SeedCommitment, record.SeedMode, PhaseCollecting
	return record, nil
}

// revealSeed returns the hex seed that the draw's freeze writes on the Draw record:
// the stored one of an unsealed event, the source's of a sealed one. Either must
// hash to the published commitment, else ErrSeedMismatch (drawproof.Reveal). A
// sealed event drawn by a client without Options.Seeds is ErrNoSeedSource.
func (c *Client) revealSeed(ctx context.Context, cfg *eventItem, record *DrawRecord) (string, error) {
	var drawSeed []byte
	from := "the seed stored on the Draw record"
	switch {
	case record.SeedMode != seed.Sealed:
		drawSeed, _ = hex.DecodeString(record.Seed) // a seed that is not hex fails the commitment
	case c.opts.Seeds == nil:
		return "", fmt.Errorf("%w: %s was created with a sealed seed; draw it with Options.Seeds set to the same source", ErrNoSeedSource, cfg.EventID)
	default:
		var err error
		if drawSeed, err = drawproof.FromSource(ctx, c.opts.Seeds.Seed, cfg.EventID); err != nil {
			return "", err
		}
		from = "the seed Options.Seeds gives"
	}
	return drawproof.Reveal(cfg.EventID, from, drawSeed, record.SeedCommitment, cfg.SeedCommitment, ErrSeedMismatch)
}

// warnUnsealed logs that a LOTTERY event just created has an unsealed seed, so that
// the development default cannot go unnoticed in production.
func (c *Client) warnUnsealed(ctx context.Context, cfg *eventItem) {
	if cfg.EventType == Lottery && cfg.SeedMode == seed.Unsealed {
		c.opts.Logger.WarnContext(ctx, "lottery seed is UNSEALED: anyone who can read the table can read it before the draw; set Options.Seeds for a real draw",
			"eventId", cfg.EventID)
	}
}
