package asyncevent

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
)

// SeedSource gives the secret seed of a LOTTERY event's draw, the same seed for the
// same event ID every time it is asked: CreateEvent asks it once to publish the seed's
// commitment, and Draw asks it again when it reveals the seed. With a source set
// (Options.Seeds) the table holds only the commitment until the draw starts, so that
// no reader of the table can compute a score before the entries are frozen.
//
// HMACSeeds derives the seeds from a secret held by the process. In production the
// secret is best kept out of the process: wrap a call of AWS KMS in a SeedSourceFunc,
// so that whoever can draw needs the KMS permission rather than a copy of a secret.
// Either
//
//   - GenerateMac with an HMAC key (KeySpec HMAC_256, KeyUsage GENERATE_VERIFY_MAC):
//     MacAlgorithm HMAC_SHA_256 and Message SeedMessage(eventID); the seed is the
//     returned Mac, 32 bytes, the HMAC-SHA256 that HMACSeeds computes, under a key
//     that never leaves KMS; or
//   - Decrypt of a sealed seed: a random 32-byte seed made for each event before it
//     is created, encrypted under a KMS key with the event ID as encryption context,
//     and the ciphertext kept by event ID (a parameter, an object; it need not be
//     secret); the seed is the returned Plaintext.
//
// With package service/kms of the AWS SDK, the first is
//
//	seeds := asyncevent.SeedSourceFunc(func(ctx context.Context, eventID string) ([]byte, error) {
//		out, err := kmsClient.GenerateMac(ctx, &kms.GenerateMacInput{
//			KeyId:        aws.String(hmacKeyARN),
//			MacAlgorithm: types.MacAlgorithmSpecHmacSha256,
//			Message:      asyncevent.SeedMessage(eventID),
//		})
//		if err != nil {
//			return nil, err
//		}
//		return out.Mac, nil
//	})
//
// Only the processes that create and draw lotteries need the permission: ingest and
// the workers never ask for a seed. The library imports no KMS client; the caller's
// SeedSourceFunc does.
type SeedSource interface {
	// Seed returns eventID's seed, at least 32 bytes.
	Seed(ctx context.Context, eventID string) ([]byte, error)
}

// SeedSourceFunc adapts a function to a SeedSource.
type SeedSourceFunc func(ctx context.Context, eventID string) ([]byte, error)

// Seed calls f.
func (f SeedSourceFunc) Seed(ctx context.Context, eventID string) ([]byte, error) {
	return f(ctx, eventID)
}

// MinSeedSecretBytes is the shortest secret HMACSeeds takes: as long as the HMAC's
// output, so that the secret is no easier to guess than a seed.
const MinSeedSecretBytes = 32

// seedLabel begins every message HMACSeeds MACs, which keeps its seeds apart from any
// other MAC made with the same secret: no other use of it MACs a message that begins
// so.
const seedLabel = "asyncevent/lottery-seed/v1\x00"

// SeedMessage returns the message whose HMAC-SHA256 is eventID's seed under
// HMACSeeds: the fixed label "asyncevent/lottery-seed/v1", a zero byte, then the
// event ID. A KMS GenerateMac of this message is the same seed.
func SeedMessage(eventID string) []byte {
	return append([]byte(seedLabel), eventID...)
}

// HMACSeeds returns a SeedSource whose seed for an event is HMAC-SHA256(secret,
// SeedMessage(eventID)). A secret shorter than MinSeedSecretBytes is
// ErrInvalidOptions. The secret is copied.
func HMACSeeds(secret []byte) (SeedSource, error) {
	if len(secret) < MinSeedSecretBytes {
		return nil, fmt.Errorf("%w: the seed secret has %d bytes, want at least %d", ErrInvalidOptions, len(secret), MinSeedSecretBytes)
	}
	secret = slices.Clone(secret)
	return SeedSourceFunc(func(_ context.Context, eventID string) ([]byte, error) {
		mac := hmac.New(sha256.New, secret)
		mac.Write(SeedMessage(eventID))
		return mac.Sum(nil), nil
	}), nil
}

// SeedMode says where a LOTTERY event's seed is kept until its draw.
type SeedMode string

const (
	// SeedSealed: the seed comes from Options.Seeds; the table holds only its
	// commitment until the draw writes the seed on the Draw record.
	SeedSealed SeedMode = "SEALED"

	// SeedUnsealed: the development default, without Options.Seeds. The seed is
	// random and stored on the Draw record from the event's creation, so anyone who
	// can read the table knows it before the draw; the scores still depend on the
	// entries hash, fixed only when the draw freezes the entries. An event with no
	// seed mode stored is unsealed too.
	SeedUnsealed SeedMode = "UNSEALED"
)

// seedBytes is the length of a random seed, and the least a SeedSource must give.
const seedBytes = 32

// newSeed makes the random seed of an unsealed event.
func newSeed() ([]byte, error) {
	seed := make([]byte, seedBytes)
	if _, err := rand.Read(seed); err != nil {
		return nil, fmt.Errorf("lottery seed: %w", err)
	}
	return seed, nil
}

// seedCommitment is the hex SHA-256 of a seed, published before the draw.
func seedCommitment(seed []byte) string {
	sum := sha256.Sum256(seed)
	return hex.EncodeToString(sum[:])
}

// newDrawRecord makes a new LOTTERY event's Draw record and sets the config's
// seedCommitment, seedMode and phase.
func (c *Client) newDrawRecord(ctx context.Context, cfg *EventConfig) (DrawRecord, error) {
	record := DrawRecord{EntityType: EntityDraw, EventID: cfg.EventID, Phase: PhaseCollecting, WinnerCount: cfg.WinnerCount}
	var seed []byte
	var err error
	if c.opts.Seeds != nil {
		record.SeedMode = SeedSealed
		seed, err = c.sourceSeed(ctx, cfg.EventID)
	} else {
		record.SeedMode = SeedUnsealed
		seed, err = newSeed()
		record.Seed = hex.EncodeToString(seed)
	}
	if err != nil {
		return DrawRecord{}, err
	}
	record.SeedCommitment = seedCommitment(seed)
	cfg.SeedCommitment, cfg.SeedMode, cfg.Phase = record.SeedCommitment, record.SeedMode, PhaseCollecting
	return record, nil
}

// sourceSeed asks Options.Seeds for eventID's seed.
func (c *Client) sourceSeed(ctx context.Context, eventID string) ([]byte, error) {
	seed, err := c.opts.Seeds.Seed(ctx, eventID)
	switch {
	case err != nil:
		return nil, fmt.Errorf("lottery seed of %s: %w", eventID, err)
	case len(seed) < seedBytes:
		return nil, fmt.Errorf("lottery seed of %s: the seed source gave %d bytes, want at least %d", eventID, len(seed), seedBytes)
	}
	return seed, nil
}

// revealSeed returns the hex seed that the draw's freeze writes on the Draw record:
// the stored one of an unsealed event, the source's of a sealed one. Either must
// hash to the published commitment, else ErrSeedMismatch, so that a draw under a
// wrong secret stops before it freezes or reveals anything. A sealed event drawn by
// a client without Options.Seeds is ErrNoSeedSource.
func (c *Client) revealSeed(ctx context.Context, cfg *EventConfig, record *DrawRecord) (string, error) {
	var seed []byte
	from := "the seed stored on the Draw record"
	switch {
	case record.SeedMode != SeedSealed:
		seed, _ = hex.DecodeString(record.Seed) // a seed that is not hex fails the commitment
	case c.opts.Seeds == nil:
		return "", fmt.Errorf("%w: %s was created with a sealed seed; draw it with Options.Seeds set to the same source", ErrNoSeedSource, cfg.EventID)
	default:
		var err error
		if seed, err = c.sourceSeed(ctx, cfg.EventID); err != nil {
			return "", err
		}
		from = "the seed Options.Seeds gives"
	}
	if got := seedCommitment(seed); got != record.SeedCommitment || got != cfg.SeedCommitment {
		return "", fmt.Errorf("%w: %s: %s hashes to %s, the published commitment is %s",
			ErrSeedMismatch, cfg.EventID, from, got, cfg.SeedCommitment)
	}
	return hex.EncodeToString(seed), nil
}

// warnUnsealed logs that a LOTTERY event just created has an unsealed seed, so that
// the development default cannot go unnoticed in production.
func (c *Client) warnUnsealed(ctx context.Context, cfg *EventConfig) {
	if cfg.EventType == Lottery && cfg.SeedMode == SeedUnsealed {
		c.opts.Logger.WarnContext(ctx, "lottery seed is UNSEALED: anyone who can read the table can read it before the draw; set Options.Seeds for a real draw",
			"eventId", cfg.EventID)
	}
}
