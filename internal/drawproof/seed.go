package drawproof

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// SeedBytes is the length of a random seed, and the least a seed.Source must give.
const SeedBytes = 32

// NewSeed makes the random seed of an unsealed event.
func NewSeed() ([]byte, error) {
	s := make([]byte, SeedBytes)
	if _, err := rand.Read(s); err != nil {
		return nil, fmt.Errorf("lottery seed: %w", err)
	}
	return s, nil
}

// Commitment is the hex SHA-256 of a seed, published before the draw.
func Commitment(s []byte) string {
	sum := sha256.Sum256(s)
	return hex.EncodeToString(sum[:])
}

// FromSource asks src (a seed.Source's Seed) for eventID's seed, which must be at
// least SeedBytes long.
func FromSource(ctx context.Context, src func(ctx context.Context, eventID string) ([]byte, error), eventID string) ([]byte, error) {
	s, err := src(ctx, eventID)
	switch {
	case err != nil:
		return nil, fmt.Errorf("lottery seed of %s: %w", eventID, err)
	case len(s) < SeedBytes:
		return nil, fmt.Errorf("lottery seed of %s: the seed source gave %d bytes, want at least %d", eventID, len(s), SeedBytes)
	}
	return s, nil
}

// Reveal returns s, hex, when it hashes to both the commitment the Draw record holds
// (recorded) and the one the config published; else an error wrapping mismatch that
// names from, where s came from. A draw checks it before it freezes, so that a draw
// under a wrong secret stops before it writes or reveals anything.
func Reveal(eventID, from string, s []byte, recorded, published string, mismatch error) (string, error) {
	if got := Commitment(s); got != recorded || got != published {
		return "", fmt.Errorf("%w: %s: %s hashes to %s, the published commitment is %s",
			mismatch, eventID, from, got, published)
	}
	return hex.EncodeToString(s), nil
}

// Seed checks the seed a draw or a pre-queue's freeze revealed (hex) against the
// commitment the event published and the one its record holds, telling problem what
// differs, and returns it.
func Seed(revealed, published, recorded string, problem Problem) []byte {
	s, err := hex.DecodeString(revealed)
	if err != nil {
		problem("the revealed seed is not hex")
	}
	if got := Commitment(s); got != published || got != recorded {
		problem("SHA-256 of the revealed seed is %s, the published commitment %s", got, published)
	}
	return s
}
