package asyncevent

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// DrawRecord is the Draw record of a LOTTERY event (PK EVENT#<eventId>, SK DRAW). It
// is created with the event, holding the secret seed whose SHA-256 the event's config
// publishes as seedCommitment; the draw reveals the seed and records the entries it
// drew from, so anyone can recompute the winners.
type DrawRecord struct {
	EntityType     EntityType `dynamodbav:"entityType"` // DRAW
	EventID        string     `dynamodbav:"eventId"`
	Phase          UIPhase    `dynamodbav:"phase"`
	WinnerCount    int64      `dynamodbav:"winnerCount"`
	SeedCommitment string     `dynamodbav:"seedCommitment"` // hex SHA-256 of the seed

	// Seed is the secret seed, hex. The library reveals it only once the draw starts.
	Seed string `dynamodbav:"seed"`

	// Set by the draw: how many entries it drew from, SHA-256 (hex) of their sorted
	// request IDs, and when it ran and was announced.
	EntryCount  int64       `dynamodbav:"entryCount,omitempty"`
	EntriesHash string      `dynamodbav:"entriesHash,omitempty"`
	DrawnAt     EpochMillis `dynamodbav:"drawnAt,omitempty"`
	AnnouncedAt EpochMillis `dynamodbav:"announcedAt,omitempty"`
}

type drawItem struct {
	Key
	DrawRecord
}

// seedBytes is the length of a lottery seed.
const seedBytes = 32

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
