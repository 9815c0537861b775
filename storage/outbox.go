package storage

import (
	"encoding/json"
	"io"
	"time"
)

// NewEvent returns an event of type typ about the resource subject (an
// account id: events of one subject are delivered in order), created at now.
// Its Payload is the webhook body the service sends:
//
//	{"id": "Webhook:<uuid>", "type": typ, "timestamp": now, "data": data}
//
// data must carry no secret: events leave the store for the platform's
// receivers and logs.
func NewEvent(r io.Reader, typ, subject string, data any, now time.Time) (Event, error) {
	id, err := NewID(r, "Webhook")
	if err != nil {
		return Event{}, err
	}
	now = now.UTC()
	payload, err := json.Marshal(struct {
		ID        string    `json:"id"`
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Data      any       `json:"data"`
	}{id, typ, now, data})
	if err != nil {
		return Event{}, err
	}
	return Event{ID: id, Type: typ, AccountID: subject, Payload: payload, CreatedAt: now}, nil
}
