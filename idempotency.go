package asyncevent

// IdempotencyLock is the IdempotencyLock item (PK IDEMP#<eventId>#<userId>, SK LOCK):
// the guard that gives one (event, user) exactly one request. It is written only
// when absent, in the same transaction as the request it names.
type IdempotencyLock struct {
	EntityType EntityType  `dynamodbav:"entityType"` // IDEMPOTENCY
	EventID    string      `dynamodbav:"eventId"`
	UserID     string      `dynamodbav:"userId"`
	RequestID  string      `dynamodbav:"requestId"` // the first request of the user
	CreatedAt  EpochMillis `dynamodbav:"createdAt"`

	// TTL is the expiry in epoch seconds: the event's end plus Options.LockTTL.
	TTL int64 `dynamodbav:"ttl,omitempty"`
}

type lockItem struct {
	Key
	IdempotencyLock
}
