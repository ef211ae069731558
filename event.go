package asyncevent

// EventConfig is the EventConfig item of an event (PK EVENT#<eventId>, SK CONFIG):
// what kind of event it is, when it is open, and its capacity or lottery settings.
type EventConfig struct {
	EntityType EntityType `dynamodbav:"entityType"` // CONFIG
	EventID    string     `dynamodbav:"eventId"`
	EventType  EventType  `dynamodbav:"eventType"`
	Name       string     `dynamodbav:"name,omitempty"`

	// The window in which ingest accepts participations; zero means unbounded.
	StartsAt EpochMillis `dynamodbav:"startsAt,omitempty"`
	EndsAt   EpochMillis `dynamodbav:"endsAt,omitempty"`

	// FIRST_COME: the number of winners N, also held by the event's EventCapacity.
	CapacityTotal int64 `dynamodbav:"capacityTotal,omitempty"`

	// LOTTERY: the number of winners K, the entry cutoff, the planned and the actual
	// announcement, and SHA-256 of the secret draw seed (hex), published before the
	// draw so that the seed revealed by the draw can be checked against it.
	WinnerCount     int64       `dynamodbav:"winnerCount,omitempty"`
	LotteryCutoffAt EpochMillis `dynamodbav:"lotteryCutoffAt,omitempty"`
	AnnounceAt      EpochMillis `dynamodbav:"announceAt,omitempty"`
	AnnouncedAt     EpochMillis `dynamodbav:"announcedAt,omitempty"`
	SeedCommitment  string      `dynamodbav:"seedCommitment,omitempty"`

	CreatedAt EpochMillis `dynamodbav:"createdAt"`
}

type configItem struct {
	Key
	EventConfig
}
