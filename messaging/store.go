package messaging

import (
	"context"
	"time"

	"github.com/amsdev/ams"
)

// Store is what the Service needs of the storage engine: the turns and
// their streams, the records a turn reads, and transactions over the
// records it changes. ams.Store gives it through ams.Narrow[Tx]
// (app.New wires it so).
type Store interface {
	turnStore
	FindAssistant(ctx context.Context, userID, id string) (*ams.Assistant, error)
	FindConversation(ctx context.Context, userID, id string) (*ams.Conversation, error)
	FindMessage(ctx context.Context, userID, id string) (*ams.Message, error)
	// FindUser gives a turn taken up by a runner its account's time zone.
	FindUser(ctx context.Context, id string) (*ams.User, error)
	RecentMessages(ctx context.Context, userID, conversationID string, n int) ([]*ams.Message, error)
	// SaveExchange stores a turn's start (a new conversation, the inbound
	// message, the running turn), or a whole turn, in one transaction.
	SaveExchange(ctx context.Context, x *ams.Exchange) error
	// Update runs fn in one transaction: it commits when fn returns nil.
	Update(ctx context.Context, fn func(tx Tx) error) error
}

// turnStore is the turns' records and their stream events.
type turnStore interface {
	FindTurn(ctx context.Context, userID, id string) (*ams.Turn, error)
	FindTurnByMessage(ctx context.Context, userID, messageID string) (*ams.Turn, error)
	FindTurnByKey(ctx context.Context, userID, key string, since time.Time) (*ams.Turn, error)
	ListTurns(ctx context.Context, userID, conversationID string, p ams.ListParams) (*ams.Page[*ams.Turn], error)
	ClaimTurn(ctx context.Context, userID, id string, now, leaseUntil time.Time) (*ams.Turn, error)
	RenewTurn(ctx context.Context, userID, id string, attempt int, leaseUntil time.Time) (cancelRequested bool, err error)
	RequestTurnCancel(ctx context.Context, userID, id string, now time.Time) (*ams.Turn, error)
	FinishTurn(ctx context.Context, t *ams.Turn, reply *ams.Message, events []*ams.Event, stream ...*ams.TurnEvent) error
	FindTurnCall(ctx context.Context, userID, turnID string, seq int) (*ams.Action, error)
	AdmitTurn(ctx context.Context, x *ams.Exchange) ([]*ams.Turn, error)
	StartQueuedTurn(ctx context.Context, userID, id string, now, leaseUntil time.Time, deadline *time.Time) (*ams.Turn, error)
	RunnableTurns(ctx context.Context, now time.Time, limit int) ([]*ams.Turn, error)
	NextTurn(ctx context.Context, userID, conversationID string) (*ams.Turn, error)
	CancelQueuedTurn(ctx context.Context, userID, id string, now time.Time) (*ams.Turn, error)
	eventStore
	// ams.TurnRequiredStore resumes and expires waiting turns (required.go).
	ams.TurnRequiredStore
}

// eventStore is a turn's stream events, as stored.
type eventStore interface {
	AppendTurnEvents(ctx context.Context, events []*ams.TurnEvent) error
	TurnEvents(ctx context.Context, turnID string, after int64, limit int) ([]*ams.TurnEvent, error)
}

// Tx is what the Service reads and writes in one transaction: the
// conversations and messages it changes, and the events it emits with
// them. ams.Tx implements it.
type Tx interface {
	FindAssistant(ctx context.Context, userID, id string) (*ams.Assistant, error)
	FindConversation(ctx context.Context, userID, id string) (*ams.Conversation, error)
	CreateConversation(ctx context.Context, c *ams.Conversation) error
	UpdateConversation(ctx context.Context, c *ams.Conversation) error
	DeleteConversation(ctx context.Context, userID, id string) ([]*ams.Message, error)
	FindMessage(ctx context.Context, userID, id string) (*ams.Message, error)
	UpdateMessage(ctx context.Context, m *ams.Message) error
	DeleteMessage(ctx context.Context, userID, id string, now time.Time) error
	Emit(ctx context.Context, events ...*ams.Event) error
}
