package clikit

import (
	"maps"

	"github.com/asyncevent/asyncevent"
)

// The CLI's outputs of results the HTTP API does not serve: the table, a local
// DynamoDB, the sweep of stuck requests, the CLI's own clicks, and a command's
// failure (the HTTP API's is a problem object, RFC 9457).

// TableCheck is what table create and table check print: the table, whether it
// matches the design, and when not, each difference.
type TableCheck struct {
	Table    string   `json:"table"`
	OK       bool     `json:"ok"`
	Problems []string `json:"problems,omitempty"`
}

// LocalDynamoDB is what local prints once its DynamoDB Local answers: its endpoint,
// how it came (Source: container, jar; env: found, not started here), whether this
// run started it (false: found, left running on exit), and Env, the variables the
// other commands and the AWS CLI need.
type LocalDynamoDB struct {
	Endpoint string            `json:"endpoint"`
	Source   string            `json:"source"`
	Started  bool              `json:"started"`
	Env      map[string]string `json:"env"`
}

// SweepReport is a sweep of an event's stuck requests (asyncevent.SweepReport): the
// requests examined, those sent again by status, those skipped (in flight or done),
// and those whose message could not be sent, with why.
type SweepReport struct {
	EventID  string            `json:"eventId"`
	Examined int               `json:"examined"`
	Resent   map[string]int    `json:"resent"`
	Skipped  int               `json:"skipped"`
	Failed   map[string]string `json:"failed"`
}

// SweepReportOf is eventID's sweep r as the CLI prints it.
func SweepReportOf(eventID string, r *asyncevent.SweepReport) SweepReport {
	out := SweepReport{EventID: eventID, Examined: r.Examined, Resent: map[string]int{}, Skipped: r.Skipped, Failed: map[string]string{}}
	for s, n := range r.Resent {
		out.Resent[string(s)] = n
	}
	maps.Copy(out.Failed, r.Failed)
	return out
}

// Click is one click of submit: the user, the request it made or found (Duplicate),
// the request's status and result as the click left them (or, decided by the CLI's
// worker, as it ended), or why the click failed.
type Click struct {
	UserID     string `json:"userId"`
	RequestID  string `json:"requestId,omitempty"`
	Duplicate  bool   `json:"duplicate"`
	Status     string `json:"status,omitempty"`
	ResultCode string `json:"resultCode,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Clicks is what submit prints: the event, the queue the requests went to ("sqs", or
// "memory": the CLI's own worker decided them), the clicks in the users' order, the
// new requests by status and the clicks that failed.
type Clicks struct {
	EventID  string         `json:"eventId"`
	Queue    string         `json:"queue"`
	Clicks   []Click        `json:"clicks"`
	ByStatus map[string]int `json:"byStatus"`
	Failed   int            `json:"failed"`
}

// Tally counts the clicks that failed, and the new requests by status.
func (c *Clicks) Tally() {
	for _, k := range c.Clicks {
		switch {
		case k.Error != "":
			c.Failed++
		case !k.Duplicate && k.Status != "":
			c.ByStatus[k.Status]++
		}
	}
}

// Failure is a command's failure under -json, one object on stderr: the command, the
// error, the exit code (1 failure, 2 usage), and when there are, the command's usage
// and Hint, what to type instead.
type Failure struct {
	Command string `json:"command"`
	Error   string `json:"error"`
	Exit    int    `json:"exit"`
	Usage   string `json:"usage,omitempty"`
	Hint    string `json:"hint,omitempty"`
}
