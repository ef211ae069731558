package asyncevent_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/asyncevent/asyncevent"
	"github.com/asyncevent/asyncevent/asynceventtest"
	"github.com/asyncevent/asyncevent/draw"
	"github.com/asyncevent/asyncevent/seed"
)

func newSecret(t *testing.T) []byte {
	t.Helper()
	secret := make([]byte, seed.MinSecretBytes)
	_, err := rand.Read(secret)
	require.NoError(t, err)
	return secret
}

func hmacSeeds(t *testing.T, secret []byte) seed.Source {
	t.Helper()
	seeds, err := seed.HMAC(secret)
	require.NoError(t, err)
	return seeds
}

// eventItems reads every item of the event "lotto" as a reader of the table would:
// GetItem of its config and Draw record, a Query of its requests on GSI2, and a Scan
// of the test's table, which holds this event only (its locks too).
func eventItems(t *testing.T, c *asyncevent.Client) []map[string]types.AttributeValue {
	t.Helper()
	ctx := context.Background()
	db := asynceventtest.DynamoDB(t)
	table := aws.String(c.TableName())
	var all []map[string]types.AttributeValue
	for _, sk := range []string{"CONFIG", "DRAW"} {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
			"PK": &types.AttributeValueMemberS{Value: "EVENT#lotto"}, "SK": &types.AttributeValueMemberS{Value: sk}}})
		require.NoError(t, err)
		require.NotNil(t, out.Item, sk)
		all = append(all, out.Item)
	}
	q := dynamodb.NewQueryPaginator(db, &dynamodb.QueryInput{TableName: table, IndexName: aws.String(asyncevent.IndexEvent),
		KeyConditionExpression:    aws.String("GSI2PK = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "EVENT#lotto"}}})
	requests := 0
	for q.HasMorePages() {
		page, err := q.NextPage(ctx)
		require.NoError(t, err)
		requests += len(page.Items)
		all = append(all, page.Items...)
	}
	require.NotZero(t, requests)
	s := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: table})
	for s.HasMorePages() {
		page, err := s.NextPage(ctx)
		require.NoError(t, err)
		all = append(all, page.Items...)
	}
	return all
}

// stringsOf lists every string and binary value of the items, nested ones too.
func stringsOf(items []map[string]types.AttributeValue) [][]byte {
	var out [][]byte
	var walk func(types.AttributeValue)
	walk = func(v types.AttributeValue) {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			out = append(out, []byte(v.Value))
		case *types.AttributeValueMemberB:
			out = append(out, v.Value)
		case *types.AttributeValueMemberSS:
			for _, s := range v.Value {
				out = append(out, []byte(s))
			}
		case *types.AttributeValueMemberM:
			for _, m := range v.Value {
				walk(m)
			}
		case *types.AttributeValueMemberL:
			for _, m := range v.Value {
				walk(m)
			}
		}
	}
	for _, item := range items {
		for _, v := range item {
			walk(v)
		}
	}
	return out
}

func TestSealedSeedCannotBeReadBeforeTheDraw(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	secret := newSecret(t)
	var logs bytes.Buffer
	c, clock, cfg := newLottery(t, asynceventtest.DynamoDB(t), asyncevent.Options{
		Seeds: hmacSeeds(t, secret), Logger: slog.New(slog.NewTextHandler(&logs, nil))}, 5, 40)
	assert.Equal(t, seed.Sealed, cfg.SeedMode)
	assert.NotContains(t, logs.String(), "UNSEALED", "a sealed event is not warned about")

	// The seed, computed outside the library: HMAC-SHA256 over the label and the ID.
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("asyncevent/lottery-seed/v1\x00lotto"))
	wantSeed := mac.Sum(nil)
	sum := sha256.Sum256(wantSeed)
	require.Equal(t, hex.EncodeToString(sum[:]), cfg.SeedCommitment)

	// Everything a reader of the table reaches before the draw: no seed, and no value
	// that hashes to the commitment, as text or as the bytes its hex stands for.
	items := eventItems(t, c)
	for _, item := range items {
		if item["SK"].(*types.AttributeValueMemberS).Value == "DRAW" {
			assert.NotContains(t, item, "seed")
			assert.Equal(t, "SEALED", item["seedMode"].(*types.AttributeValueMemberS).Value)
		}
	}
	for _, v := range stringsOf(items) {
		assert.NotContains(t, string(v), hex.EncodeToString(wantSeed))
		assert.False(t, bytes.Contains(v, wantSeed))
		candidates := [][]byte{v}
		if b, err := hex.DecodeString(string(v)); err == nil {
			candidates = append(candidates, b)
		}
		for _, b := range candidates {
			h := sha256.Sum256(b)
			assert.NotEqual(t, cfg.SeedCommitment, hex.EncodeToString(h[:]), "%q hashes to the commitment", v)
		}
	}
	sealed, err := c.GetDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.Empty(t, sealed.Seed)
	assert.Equal(t, seed.Sealed, sealed.SeedMode)

	// The draw reveals the seed on the Draw record, and anyone verifies it from the
	// table, without the secret.
	clock.Advance(2 * time.Hour)
	res, err := c.Draw(ctx, "lotto")
	require.NoError(t, err)
	assert.Equal(t, hex.EncodeToString(wantSeed), res.Record.Seed)
	assert.Equal(t, seed.Sealed, res.Record.SeedMode)
	var ids, won []string
	for _, r := range requestsOf(t, c, "lotto") {
		ids = append(ids, r.RequestID)
		if r.Status == asyncevent.StatusSucceeded {
			won = append(won, r.RequestID)
		}
	}
	assert.Equal(t, recomputeWinners(t, res.Record.Seed, ids, 5), res.Winners)
	assert.ElementsMatch(t, res.Winners, won)

	anyone, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now})
	require.NoError(t, err)
	v, err := anyone.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
	again, err := anyone.Draw(ctx, "lotto")
	require.NoError(t, err, "a drawn event needs no source: its seed is on the table")
	assert.Equal(t, res.Winners, again.Winners)
}

func TestSealedDrawRefusesAWrongOrMissingSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, clock, cfg := newLottery(t, asynceventtest.DynamoDB(t), asyncevent.Options{Seeds: hmacSeeds(t, newSecret(t))}, 3, 20)
	clock.Advance(2 * time.Hour)
	before := eventItems(t, c)

	for name, tc := range map[string]struct {
		seeds seed.Source
		want  error
	}{
		"wrong secret": {hmacSeeds(t, newSecret(t)), asyncevent.ErrSeedMismatch},
		"no source":    {nil, asyncevent.ErrNoSeedSource},
	} {
		other, err := asyncevent.New(asynceventtest.DynamoDB(t), asyncevent.Options{TableName: c.TableName(), Clock: clock.Now, Seeds: tc.seeds})
		require.NoError(t, err)
		_, err = other.Draw(ctx, "lotto")
		require.ErrorIs(t, err, tc.want, name)
		assert.ElementsMatch(t, before, eventItems(t, c), "%s: nothing frozen, nothing revealed", name)
		event, err := c.GetEvent(ctx, "lotto")
		require.NoError(t, err)
		assert.Equal(t, asyncevent.PhaseCollecting, event.Phase, name)
	}

	res, err := c.Draw(ctx, "lotto")
	require.NoError(t, err, "the right source draws it")
	sum := sha256.Sum256(must(hex.DecodeString(res.Record.Seed)))
	assert.Equal(t, cfg.SeedCommitment, hex.EncodeToString(sum[:]))
	v, err := c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestUnsealedSeedIsTheDevDefaultAndSaysSo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs bytes.Buffer
	c, clock, cfg := newLottery(t, asynceventtest.DynamoDB(t), asyncevent.Options{
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}, 3, 20)
	assert.Equal(t, seed.Unsealed, cfg.SeedMode)
	assert.Contains(t, logs.String(), "level=WARN")
	assert.Contains(t, logs.String(), "lottery seed is UNSEALED")
	assert.Contains(t, logs.String(), "eventId=lotto")

	// The seed is on the table from the start, and the item says so; the library's
	// own answers still leave it out until the draw.
	var stored string
	for _, item := range eventItems(t, c) {
		if item["SK"].(*types.AttributeValueMemberS).Value == "DRAW" {
			stored = item["seed"].(*types.AttributeValueMemberS).Value
			assert.Equal(t, "UNSEALED", item["seedMode"].(*types.AttributeValueMemberS).Value)
		}
	}
	require.NotEmpty(t, stored)
	record, err := c.GetDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.Empty(t, record.Seed)
	assert.Equal(t, seed.Unsealed, record.SeedMode)

	clock.Advance(2 * time.Hour)
	res, err := c.Draw(ctx, "lotto")
	require.NoError(t, err)
	assert.Equal(t, stored, res.Record.Seed)
	v, err := c.VerifyDraw(ctx, "lotto")
	require.NoError(t, err)
	assert.True(t, v.OK(), v.String())
}

func TestSeedSourceChecks(t *testing.T) {
	t.Parallel()
	_, err := seed.HMAC(make([]byte, seed.MinSecretBytes-1))
	assert.ErrorIs(t, err, seed.ErrShortSecret)

	// The same secret gives each event its own seed, the same every time; the
	// secret is copied, so a caller reusing its buffer changes nothing.
	secret := newSecret(t)
	seeds := hmacSeeds(t, secret)
	a := must(seeds.Seed(context.Background(), "a"))
	clear(secret)
	assert.Equal(t, a, must(seeds.Seed(context.Background(), "a")))
	assert.NotEqual(t, a, must(seeds.Seed(context.Background(), "b")))
	assert.Len(t, a, 32)

	// A source giving a short seed is refused at creation, with nothing written.
	short := seed.SourceFunc(func(context.Context, string) ([]byte, error) { return []byte("short"), nil })
	c := asynceventtest.NewTableOn(t, asynceventtest.DynamoDB(t), asyncevent.Options{Seeds: short, Clock: asynceventtest.NewClock(t0).Now})
	_, err = c.CreateEvent(context.Background(), asyncevent.EventSettings{EventID: "lotto", EventType: asyncevent.Lottery,
		WinnerCount: 1, LotteryCutoffAt: asyncevent.MillisOf(cutoff)})
	assert.ErrorContains(t, err, "the seed source gave 5 bytes, want at least 32")
	_, err = c.GetEvent(context.Background(), "lotto")
	assert.ErrorIs(t, err, asyncevent.ErrEventNotFound)
}

// TestDrawScoreBindsTheEntrySet: whoever knows the seed cannot keep a score while the
// entries change: re-rolling one request ID, or one entry more, changes every
// entry's score, and so which entries win.
func TestDrawScoreBindsTheEntrySet(t *testing.T) {
	t.Parallel()
	secret := bytes.Repeat([]byte{7}, 32)
	var ids []string
	for i := range 200 {
		ids = append(ids, fmt.Sprintf("req-%03d", i))
	}
	h := draw.EntriesHash(ids)
	hashBytes := must(hex.DecodeString(h))
	for _, id := range ids {
		want := sha256.Sum256(slices.Concat(secret, hashBytes, []byte(id)))
		require.Equal(t, want, draw.Score(secret, h, id), "SHA-256(seed ‖ entries hash ‖ requestId)")
	}

	for name, changed := range map[string][]string{
		"a request ID re-rolled": append(slices.Clone(ids[:199]), "req-rerolled"),
		"one entry more":         append(slices.Clone(ids), "req-late"),
		"one entry less":         slices.Clone(ids[1:]),
	} {
		h2 := draw.EntriesHash(changed)
		require.NotEqual(t, h, h2, name)
		for _, id := range changed {
			if slices.Contains(ids, id) {
				assert.NotEqual(t, draw.Score(secret, h, id), draw.Score(secret, h2, id), "%s: %s kept its score", name, id)
			}
		}
		assert.NotEqual(t, draw.Winners(secret, ids, 10), draw.Winners(secret, changed, 10), name)
	}

	// draw.Winners scores with the entries' own hash, whatever their order.
	shuffled := slices.Clone(ids)
	slices.Reverse(shuffled)
	assert.Equal(t, draw.Winners(secret, ids, 10), draw.Winners(secret, shuffled, 10))
	assert.Equal(t, recomputeWinners(t, hex.EncodeToString(secret), ids, 10), draw.Winners(secret, ids, 10))
}
