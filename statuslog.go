package asyncevent

// StatusLog is an optional StatusLog item (PK REQ#<requestId>, SK
// LOG#<occurredAt>#<suffix>): one transition of a request, for the operator's
// timeline. It never carries GSI attributes.
type StatusLog struct {
	EntityType EntityType  `dynamodbav:"entityType"` // STATUS_LOG
	RequestID  string      `dynamodbav:"requestId"`
	FromStatus Status      `dynamodbav:"fromStatus,omitempty"` // empty for the first entry
	ToStatus   Status      `dynamodbav:"toStatus"`
	OccurredAt EpochMillis `dynamodbav:"occurredAt"`
	Message    string      `dynamodbav:"message,omitempty"`

	// TTL is the expiry in epoch seconds: OccurredAt plus Options.StatusLogTTL.
	TTL int64 `dynamodbav:"ttl,omitempty"`
}

type statusLogItem struct {
	Key
	StatusLog
}
