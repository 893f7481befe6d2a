package sqlstore

import (
	"context"

	"github.com/amsdev/ams"
)

// Erasure (issue 31, point 4). Deleting a message, or a conversation with
// its messages, removes their text from every copy the store keeps, in
// the transaction of the delete: the retained events that carried it
// (message.created and message.updated; their content becomes null), and
// with them the deliveries not made yet (a delivery job reads its event
// when it is claimed), and the stream events of the turns whose messages
// they were. message.deleted itself carries ids only
// (ams.MessageDeletedEvent).

// contentEvents are the types of the events that carry a message's text.
const contentEvents = `('` + ams.EventMessageCreated + `', '` + ams.EventMessageUpdated + `')`

// eraseMessages removes the text of the user's messages whose data field
// field (message_id or conversation_id) is value from the retained events,
// and the stream events of the turns that made or answered them.
func (q *Queries) eraseMessages(ctx context.Context, userID, field, value string) error {
	turns := `SELECT id FROM turns WHERE user_id = $1 AND (inbound_message_id = $2 OR reply_message_id = $2)`
	if field == "conversation_id" {
		turns = `SELECT id FROM turns WHERE user_id = $1 AND conversation_id = $2`
	}
	_, err := q.batch(ctx, []Stmt{
		{"erase message text from events", `UPDATE events SET data = ` + q.s.d.EventNulled("content") +
			` WHERE user_id = $1 AND type IN ` + contentEvents + ` AND ` + q.s.d.EventField(field) + ` = $2`, []any{userID, value}},
		{"erase turn stream", `DELETE FROM turn_events WHERE turn_id IN (` + turns + `)`, []any{userID, value}},
	})
	return err
}
