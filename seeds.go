package asyncevent

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/asyncevent/asyncevent/seed"
)

// seedBytes is the length of a random seed, and the least a seed.Source must give.
const seedBytes = 32

// newSeed makes the random seed of an unsealed event.
func newSeed() ([]byte, error) {
	s := make([]byte, seedBytes)
	if _, err := rand.Read(s); err != nil {
		return nil, fmt.Errorf("lottery seed: %w", err)
	}
	return s, nil
}

// seedCommitment is the hex SHA-256 of a seed, published before the draw.
func seedCommitment(s []byte) string {
	sum := sha256.Sum256(s)
	return hex.EncodeToString(sum[:])
}

// newDrawRecord makes a new LOTTERY event's Draw record and sets the config's
// seedCommitment, seedMode and phase.
func (c *Client) newDrawRecord(ctx context.Context, cfg *eventItem) (DrawRecord, error) {
	record := DrawRecord{EventID: cfg.EventID, Phase: PhaseCollecting, WinnerCount: cfg.WinnerCount}
	var drawSeed []byte
	var err error
	if c.opts.Seeds != nil {
		record.SeedMode = seed.Sealed
		drawSeed, err = c.sourceSeed(ctx, cfg.EventID)
	} else {
		record.SeedMode = seed.Unsealed
		drawSeed, err = newSeed()
		record.Seed = hex.EncodeToString(drawSeed)
	}
	if err != nil {
		return DrawRecord{}, err
	}
	record.SeedCommitment = seedCommitment(drawSeed)
	cfg.SeedCommitment, cfg.SeedMode, cfg.Phase = record.SeedCommitment, record.SeedMode, PhaseCollecting
	return record, nil
}

// sourceSeed asks Options.Seeds for eventID's seed.
func (c *Client) sourceSeed(ctx context.Context, eventID string) ([]byte, error) {
	s, err := c.opts.Seeds.Seed(ctx, eventID)
	switch {
	case err != nil:
		return nil, fmt.Errorf("lottery seed of %s: %w", eventID, err)
	case len(s) < seedBytes:
		return nil, fmt.Errorf("lottery seed of %s: the seed source gave %d bytes, want at least %d", eventID, len(s), seedBytes)
	}
	return s, nil
}

// revealSeed returns the hex seed that the draw's freeze writes on the Draw record:
// the stored one of an unsealed event, the source's of a sealed one. Either must
// hash to the published commitment, else ErrSeedMismatch, so that a draw under a
// wrong secret stops before it freezes or reveals anything. A sealed event drawn by
// a client without Options.Seeds is ErrNoSeedSource.
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
		if drawSeed, err = c.sourceSeed(ctx, cfg.EventID); err != nil {
			return "", err
		}
		from = "the seed Options.Seeds gives"
	}
	if got := seedCommitment(drawSeed); got != record.SeedCommitment || got != cfg.SeedCommitment {
		return "", fmt.Errorf("%w: %s: %s hashes to %s, the published commitment is %s",
			ErrSeedMismatch, cfg.EventID, from, got, cfg.SeedCommitment)
	}
	return hex.EncodeToString(drawSeed), nil
}

// warnUnsealed logs that a LOTTERY event just created has an unsealed seed, so that
// the development default cannot go unnoticed in production.
func (c *Client) warnUnsealed(ctx context.Context, cfg *eventItem) {
	if cfg.EventType == Lottery && cfg.SeedMode == seed.Unsealed {
		c.opts.Logger.WarnContext(ctx, "lottery seed is UNSEALED: anyone who can read the table can read it before the draw; set Options.Seeds for a real draw",
			"eventId", cfg.EventID)
	}
}
