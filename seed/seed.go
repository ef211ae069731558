// Package seed gives the secret seeds of asyncevent's LOTTERY draws. Source is what
// the library asks for a seed (asyncevent's Options.Seeds); HMAC derives the seeds
// from a secret held by the process, and SourceFunc adapts a function, such as a call
// of AWS KMS; Mode records where an event's seed is kept until its draw.
package seed

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
)

// Source gives the secret seed of a LOTTERY event's draw, the same seed for the same
// event ID every time it is asked: asyncevent's Client.CreateEvent asks it once to
// publish the seed's commitment, and Client.Draw asks it again when it reveals the
// seed. With a source set (asyncevent's Options.Seeds) the table holds only the
// commitment until the draw starts, so that no reader of the table can compute a
// score before the entries are frozen.
//
// HMAC derives the seeds from a secret held by the process. In production the secret
// is best kept out of the process: wrap a call of AWS KMS in a SourceFunc, so that
// whoever can draw needs the KMS permission rather than a copy of a secret. Either
//
//   - GenerateMac with an HMAC key (KeySpec HMAC_256, KeyUsage GENERATE_VERIFY_MAC):
//     MacAlgorithm HMAC_SHA_256 and Message Message(eventID); the seed is the
//     returned Mac, 32 bytes, the HMAC-SHA256 that HMAC computes, under a key that
//     never leaves KMS; or
//   - Decrypt of a sealed seed: a random 32-byte seed made for each event before it
//     is created, encrypted under a KMS key with the event ID as encryption context,
//     and the ciphertext kept by event ID (a parameter, an object; it need not be
//     secret); the seed is the returned Plaintext.
//
// With package service/kms of the AWS SDK, the first is
//
//	seeds := seed.SourceFunc(func(ctx context.Context, eventID string) ([]byte, error) {
//		out, err := kmsClient.GenerateMac(ctx, &kms.GenerateMacInput{
//			KeyId:        aws.String(hmacKeyARN),
//			MacAlgorithm: types.MacAlgorithmSpecHmacSha256,
//			Message:      seed.Message(eventID),
//		})
//		if err != nil {
//			return nil, err
//		}
//		return out.Mac, nil
//	})
//
// Only the processes that create and draw lotteries need the permission: ingest and
// the workers never ask for a seed. Neither this package nor asyncevent imports a KMS
// client; the caller's SourceFunc does.
type Source interface {
	// Seed returns eventID's seed, at least 32 bytes.
	Seed(ctx context.Context, eventID string) ([]byte, error)
}

// SourceFunc adapts a function to a Source.
type SourceFunc func(ctx context.Context, eventID string) ([]byte, error)

// Seed calls f.
func (f SourceFunc) Seed(ctx context.Context, eventID string) ([]byte, error) {
	return f(ctx, eventID)
}

// MinSecretBytes is the shortest secret HMAC takes: as long as the HMAC's output, so
// that the secret is no easier to guess than a seed.
const MinSecretBytes = 32

// ErrShortSecret reports a secret shorter than MinSecretBytes, which HMAC refuses.
var ErrShortSecret = errors.New("seed: secret too short")

// label begins every message HMAC MACs, which keeps its seeds apart from any other
// MAC made with the same secret: no other use of it MACs a message that begins so.
const label = "asyncevent/lottery-seed/v1\x00"

// Message returns the message whose HMAC-SHA256 is eventID's seed under HMAC: the
// fixed label "asyncevent/lottery-seed/v1", a zero byte, then the event ID. A KMS
// GenerateMac of this message is the same seed.
func Message(eventID string) []byte {
	return append([]byte(label), eventID...)
}

// HMAC returns a Source whose seed for an event is HMAC-SHA256(secret,
// Message(eventID)). A secret shorter than MinSecretBytes is ErrShortSecret. The
// secret is copied.
func HMAC(secret []byte) (Source, error) {
	if len(secret) < MinSecretBytes {
		return nil, fmt.Errorf("%w: %d bytes, want at least %d", ErrShortSecret, len(secret), MinSecretBytes)
	}
	secret = slices.Clone(secret)
	return SourceFunc(func(_ context.Context, eventID string) ([]byte, error) {
		mac := hmac.New(sha256.New, secret)
		mac.Write(Message(eventID))
		return mac.Sum(nil), nil
	}), nil
}

// Mode says where a LOTTERY event's seed is kept until its draw. It is stored, as the
// attribute seedMode, on the event's config and its Draw record.
type Mode string

const (
	// Sealed: the seed comes from a Source (asyncevent's Options.Seeds); the table
	// holds only its commitment until the draw writes the seed on the Draw record.
	Sealed Mode = "SEALED"

	// Unsealed: the development default, without a Source. The seed is random and
	// stored on the Draw record from the event's creation, so anyone who can read the
	// table knows it before the draw; the scores still depend on the entries hash,
	// fixed only when the draw freezes the entries. An event with no seed mode stored
	// is unsealed too.
	Unsealed Mode = "UNSEALED"
)
